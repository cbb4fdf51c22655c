import diagnostics from 'node:diagnostics_channel'

/**
 * node:diagnostics_channel channels. Messages are only built when a channel has subscribers,
 * so an unobserved client pays one boolean check per request.
 */
export const channels = {
  connect: diagnostics.channel('tidelog:connection:connect'),
  close: diagnostics.channel('tidelog:connection:close'),
  requestStart: diagnostics.channel('tidelog:request:start'),
  requestEnd: diagnostics.channel('tidelog:request:end'),
  requestError: diagnostics.channel('tidelog:request:error'),
} as const

export interface ConnectionEvent {
  /** "host:port" */
  broker: string
  nodeId: number | undefined
  /** Connect (TCP, TLS, ApiVersions, SASL) duration for connect events; lifetime for close events. */
  durationMs: number
  /** Why the connection closed, if it did not close on request. */
  error?: Error
}

export interface RequestEvent {
  broker: string
  nodeId: number | undefined
  clientId: string | null
  /** The client's ClientOptions.diagnosticsTag. */
  tag: unknown
  apiKey: number
  apiName: string
  apiVersion: number
  correlationId: number
  /** Time from writing the request to its response (end and error events). */
  durationMs?: number
  /** End events of answered requests: the response frame's bytes (correlation id and body) and the decoded body. */
  size?: number
  response?: unknown
  error?: Error
}
