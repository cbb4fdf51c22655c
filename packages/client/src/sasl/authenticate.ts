import { ErrorCodes, SaslAuthenticate, SaslHandshake, errorByCode, type ApiDefinition } from '@tidelog/protocol'
import { SaslAuthenticationError } from '../errors.js'
import type { ApiVersionTable } from '../versions.js'
import type { SaslContext, SaslMechanism } from './types.js'

/** What the exchange needs from a connection that has finished ApiVersions but is not yet ready. */
export interface SaslTransport {
  readonly broker: string
  readonly versions: ApiVersionTable
  sendDuringSetup<Req, Res>(api: ApiDefinition<Req, Res>, version: number, body: Req): Promise<Res>
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/**
 * SaslHandshake v1 then SaslAuthenticate round trips (KIP-152), driven by the mechanism's
 * iterator. Brokers older than 1.0 framed tokens without SaslAuthenticate; the issue targets
 * Kafka 2.1+, so that form is not spoken. Returns the session lifetime the broker granted
 * (KIP-368; 0 when connections.max.reauth.ms is not set).
 */
export async function saslAuthenticate(t: SaslTransport, mechanism: SaslMechanism, ctx: SaslContext): Promise<{ sessionLifetimeMs: number }> {
  const name = mechanism.mechanism
  const fail = (message: string, options?: { code?: number; cause?: unknown }) =>
    new SaslAuthenticationError(message, name, t.broker, options)

  if (!t.versions.supports(SaslAuthenticate) || !t.versions.supports(SaslHandshake, 1)) {
    throw fail('the broker does not offer SaslHandshake v1 and SaslAuthenticate (Kafka 1.0 or newer is needed)')
  }
  const handshake = await t.sendDuringSetup(SaslHandshake, t.versions.highest(SaslHandshake, 1), { mechanism: name })
  if (handshake.errorCode === ErrorCodes.UNSUPPORTED_SASL_MECHANISM) {
    throw fail(`the broker does not enable ${name}; it offers ${handshake.mechanisms.join(', ') || 'none'}`, { code: handshake.errorCode })
  }
  if (handshake.errorCode !== 0) {
    throw fail(`SaslHandshake answered ${errorByCode(handshake.errorCode).name}`, { code: handshake.errorCode })
  }

  const version = t.versions.highest(SaslAuthenticate)
  const steps = mechanism.authenticate(ctx)
  let lifetime = 0
  let step: IteratorResult<Uint8Array, void>
  try {
    step = await steps.next()
  } catch (e) {
    throw fail(e instanceof Error ? e.message : String(e), { cause: e })
  }
  while (step.done !== true) {
    const res = await t.sendDuringSetup(SaslAuthenticate, version, { authBytes: step.value })
    if (res.errorCode !== 0) {
      await steps.return?.()
      const info = errorByCode(res.errorCode)
      throw fail(res.errorMessage ? `${info.name}: ${res.errorMessage}` : `${info.name}: ${info.message}`, { code: res.errorCode })
    }
    lifetime = Number(res.sessionLifetimeMs ?? 0n)
    try {
      step = await steps.next(asBuffer(res.authBytes))
    } catch (e) {
      throw fail(e instanceof Error ? e.message : String(e), { cause: e })
    }
  }
  return { sessionLifetimeMs: lifetime }
}
