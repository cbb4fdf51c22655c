import { ErrorCodes, SaslAuthenticate, type SaslAuthenticateResponse } from '@tidelog/protocol'
import type { AuthenticateResult } from '../security/authenticator.js'
import { defineHandler } from './types.js'

function asBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength)
}

/**
 * SaslAuthenticate 0-2 (KIP-152; v1 adds session_lifetime_ms, KIP-368). A failure is answered
 * with SASL_AUTHENTICATION_FAILED and Kafka's message after connection.failed.authentication.delay.ms
 * (which slows password guessing), then the connection closes; nothing after it is read.
 */
export const saslAuthenticateHandler = defineHandler({
  api: SaslAuthenticate,
  minVersion: 0,
  maxVersion: 2,
  handle(ctx, req): SaslAuthenticateResponse | Promise<SaslAuthenticateResponse> {
    if (ctx.security === undefined) {
      return { errorCode: ErrorCodes.ILLEGAL_SASL_STATE, errorMessage: null, authBytes: new Uint8Array(0), sessionLifetimeMs: 0n }
    }
    const security = ctx.security
    // A callback handler (sasl.server.callback.handler.class) may decide asynchronously.
    const answer = (r: AuthenticateResult): SaslAuthenticateResponse | Promise<SaslAuthenticateResponse> => {
      const res: SaslAuthenticateResponse = { errorCode: r.errorCode, errorMessage: r.errorMessage, authBytes: r.authBytes, sessionLifetimeMs: r.sessionLifetimeMs }
      if (!r.close) return res
      ctx.closeConnection('SASL authentication failed')
      const delay = security.manager.failedAuthenticationDelayMs
      if (delay <= 0) return res
      return new Promise((resolve) => setTimeout(() => resolve(res), delay))
    }
    const r = security.authenticate(asBuffer(req.authBytes), ctx.version)
    return r instanceof Promise ? r.then(answer) : answer(r)
  },
  errorResponse(_req, errorCode) {
    return { errorCode, errorMessage: null, authBytes: new Uint8Array(0), sessionLifetimeMs: 0n }
  },
})
