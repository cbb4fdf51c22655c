import { DescribeCluster, ErrorCodes } from '@tidelog/protocol'
import { defineHandler } from './types.js'

const BROKERS_ENDPOINT = 1
const OPS_NOT_REQUESTED = -2147483648

/** DescribeCluster 0-1: this broker, which is also the controller (KIP-919 endpoint type from v1). */
export const describeClusterHandler = defineHandler({
  api: DescribeCluster,
  minVersion: 0,
  maxVersion: 1,
  handle(ctx, req) {
    const b = ctx.broker
    const endpoint = ctx.version >= 1 ? { endpointType: req.endpointType ?? BROKERS_ENDPOINT } : {}
    if (ctx.version >= 1 && (req.endpointType ?? BROKERS_ENDPOINT) !== BROKERS_ENDPOINT) {
      return { throttleTimeMs: 0, errorCode: ErrorCodes.UNSUPPORTED_ENDPOINT_TYPE, errorMessage: 'only broker endpoints are served', ...endpoint, clusterId: b.clusterId, controllerId: -1, brokers: [], clusterAuthorizedOperations: OPS_NOT_REQUESTED }
    }
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCodes.NONE,
      errorMessage: null,
      ...endpoint,
      clusterId: b.clusterId,
      controllerId: b.nodeId,
      brokers: [{ brokerId: b.nodeId, host: b.advertised.host, port: b.advertised.port, rack: null }],
      clusterAuthorizedOperations: OPS_NOT_REQUESTED,
    }
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, errorMessage: null, clusterId: '', controllerId: -1, brokers: [], clusterAuthorizedOperations: OPS_NOT_REQUESTED }
  },
})
