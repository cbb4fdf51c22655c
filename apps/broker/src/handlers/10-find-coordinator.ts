import { ErrorCodes, FindCoordinator, type FindCoordinatorResponse } from '@tidelog/protocol'
import { defineHandler } from './types.js'

// Key types: 0 group, 1 transaction (KIP-98), 2 share group (KIP-932, not served).
const MAX_KEY_TYPE = 1

/** FindCoordinator 0-6: this broker coordinates every group (one key before v4, a batch of keys from v4, KIP-699). */
export const findCoordinatorHandler = defineHandler({
  api: FindCoordinator,
  minVersion: 0,
  maxVersion: 6,
  handle(ctx, req): FindCoordinatorResponse {
    const { nodeId, advertised } = ctx.broker
    const keyType = req.keyType ?? 0
    const answer = (key: string) => {
      const errorCode = keyType > MAX_KEY_TYPE || keyType < 0 ? ErrorCodes.INVALID_REQUEST : key === '' ? ErrorCodes.INVALID_REQUEST : ErrorCodes.NONE
      return errorCode === ErrorCodes.NONE
        ? { key, nodeId, host: advertised.host, port: advertised.port, errorCode, errorMessage: null }
        : { key, nodeId: -1, host: '', port: -1, errorCode, errorMessage: null }
    }
    if (ctx.version >= 4) {
      return { throttleTimeMs: 0, coordinators: (req.coordinatorKeys ?? []).map(answer) }
    }
    const a = answer(req.key ?? '')
    return { throttleTimeMs: 0, errorCode: a.errorCode, errorMessage: null, nodeId: a.nodeId, host: a.host, port: a.port }
  },
  errorResponse(req, errorCode, version) {
    if (version >= 4) {
      return { coordinators: (req.coordinatorKeys ?? []).map((key) => ({ key, nodeId: -1, host: '', port: -1, errorCode, errorMessage: null })) }
    }
    return { errorCode, errorMessage: null, nodeId: -1, host: '', port: -1 }
  },
})
