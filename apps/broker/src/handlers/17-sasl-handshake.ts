import { ErrorCodes, SaslHandshake } from '@tidelog/protocol'
import { defineHandler } from './types.js'

/**
 * SaslHandshake 0-1: picks the mechanism for the exchange that follows (v1: in SaslAuthenticate
 * requests, KIP-152; v0: as bare tokens). An unsupported mechanism is answered with the enabled
 * ones and the connection closes, as Kafka does; on a listener without SASL it is ILLEGAL_SASL_STATE.
 */
export const saslHandshakeHandler = defineHandler({
  api: SaslHandshake,
  minVersion: 0,
  maxVersion: 1,
  handle(ctx, req) {
    if (ctx.security === undefined) return { errorCode: ErrorCodes.ILLEGAL_SASL_STATE, mechanisms: [] }
    const r = ctx.security.handshake(req.mechanism, ctx.version)
    if (r.close) ctx.closeConnection(`SaslHandshake refused (${r.errorCode === ErrorCodes.UNSUPPORTED_SASL_MECHANISM ? 'mechanism not enabled' : 'illegal state'})`)
    return { errorCode: r.errorCode, mechanisms: r.mechanisms }
  },
  errorResponse(_req, errorCode) {
    return { errorCode, mechanisms: [] }
  },
})
