/** What a mechanism may want to know about the connection it authenticates. */
export interface SaslContext {
  host: string
  port: number
  nodeId: number | undefined
  clientId: string | null
}

/**
 * A SASL mechanism. `authenticate` returns an async iterator that yields each client message
 * and receives the broker's answer to it as the argument of the next `next()` call; returning
 * ends the exchange successfully, throwing fails it. An async generator fits directly:
 *
 *     authenticate: async function* () { const challenge = yield firstMessage; ... }
 *
 * The bytes travel in SaslAuthenticate requests (KIP-152), after a SaslHandshake naming
 * `mechanism`.
 */
export interface SaslMechanism {
  readonly mechanism: string
  authenticate(ctx: SaslContext): AsyncIterator<Uint8Array, void, Buffer>
}

export interface PlainOptions {
  mechanism: 'plain' | 'PLAIN'
  username: string
  password: string
  /** Authorization identity (RFC 4616); Kafka accepts only an empty one or the username. */
  authorizationIdentity?: string
}

export interface ScramOptions {
  mechanism: 'scram-sha-256' | 'scram-sha-512' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512'
  username: string
  password: string
}

export interface OAuthBearerToken {
  /** The compact-serialised token (e.g. a JWT). */
  value: string
  /** SASL extensions (KIP-342) sent with the token. */
  extensions?: Record<string, string>
}

export interface OAuthBearerOptions {
  mechanism: 'oauthbearer' | 'OAUTHBEARER'
  /** Called for every new connection, so it can hand out a fresh token. */
  oauthBearerProvider: (ctx: SaslContext) => OAuthBearerToken | Promise<OAuthBearerToken>
  authorizationIdentity?: string
}

export type SaslOptions = PlainOptions | ScramOptions | OAuthBearerOptions | SaslMechanism
