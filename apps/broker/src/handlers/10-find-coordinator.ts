import { ErrorCodes, FindCoordinator, type FindCoordinatorResponse, type FindCoordinatorResponseCoordinator } from '@tidelog/protocol'
import type { BrokerContext } from '../context.js'
import { defineHandler } from './types.js'

// Key types: 0 a group, 1 a transactional id (KIP-98). 2 is a share group (KIP-932, v6+),
// which a broker without a share coordinator refuses, as Kafka 3.9 does.
const GROUP = 0
const TRANSACTION = 1

function coordinator(broker: BrokerContext, key: string, keyType: number): FindCoordinatorResponseCoordinator {
  if (keyType !== GROUP && keyType !== TRANSACTION) {
    return { key, nodeId: -1, host: '', port: -1, errorCode: ErrorCodes.INVALID_REQUEST, errorMessage: `Unknown coordinator type received: ${keyType}` }
  }
  return { key, nodeId: broker.nodeId, host: broker.advertised.host, port: broker.advertised.port, errorCode: ErrorCodes.NONE, errorMessage: null }
}

/**
 * FindCoordinator 0-6: this broker coordinates every group and transactional
 * id. One key before v4, a batch of keys from v4 (KIP-699).
 */
export const findCoordinatorHandler = defineHandler({
  api: FindCoordinator,
  minVersion: 0,
  maxVersion: 6,
  handle(ctx, req): FindCoordinatorResponse {
    const keyType = req.keyType ?? GROUP
    if (ctx.version >= 4) {
      return { throttleTimeMs: 0, coordinators: (req.coordinatorKeys ?? []).map((key) => coordinator(ctx.broker, key, keyType)) }
    }
    const c = coordinator(ctx.broker, req.key ?? '', keyType)
    // Before v4 Kafka puts the error's name in the message even on success ("NONE").
    return { throttleTimeMs: 0, errorCode: c.errorCode, errorMessage: c.errorMessage ?? 'NONE', nodeId: c.nodeId, host: c.host, port: c.port }
  },
  errorResponse(req, errorCode, version) {
    if (version >= 4) {
      return { coordinators: (req.coordinatorKeys ?? []).map((key) => ({ key, nodeId: -1, host: '', port: -1, errorCode, errorMessage: null })) }
    }
    return { errorCode, errorMessage: null, nodeId: -1, host: '', port: -1 }
  },
})
