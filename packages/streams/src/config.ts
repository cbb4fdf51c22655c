import type { Serde } from '@tidelog/client'

/** What to do with a record that cannot be deserialized or produced (Java's handler responses). */
export type HandlerResponse = 'CONTINUE' | 'FAIL'

/**
 * Java's DeserializationExceptionHandler: 'logAndFail' (LogAndFailExceptionHandler, the default),
 * 'logAndContinue' (LogAndContinueExceptionHandler), or a function deciding per record.
 */
export type DeserializationExceptionHandler =
  | 'logAndFail'
  | 'logAndContinue'
  | ((record: { topic: string; partition: number; offset: number }, error: unknown) => HandlerResponse)

/**
 * Java's ProductionExceptionHandler, for records that cannot be serialized or sent: 'fail'
 * (DefaultProductionExceptionHandler), 'continue', or a function deciding per record.
 */
export type ProductionExceptionHandler = 'fail' | 'continue' | ((record: { topic: string }, error: unknown) => HandlerResponse)

/** Kafka Streams' configuration under Java's names (StreamsConfig); serdes are objects, not class names. */
export interface StreamsConfig {
  'application.id'?: string
  'bootstrap.servers'?: string | string[]
  'default.key.serde'?: Serde<any>
  'default.value.serde'?: Serde<any>
  /** Only at_least_once is implemented so far. */
  'processing.guarantee'?: 'at_least_once'
  'commit.interval.ms'?: number
  'num.stream.threads'?: number
  'replication.factor'?: number
  /** host:port where this instance answers interactive queries (advertised to the other instances). */
  'application.server'?: string
  'default.deserialization.exception.handler'?: DeserializationExceptionHandler
  'default.production.exception.handler'?: ProductionExceptionHandler
}

/** The handler's answer, with the built-in names resolved. */
export function deserializationResponse(h: DeserializationExceptionHandler | undefined, record: { topic: string; partition: number; offset: number }, error: unknown): HandlerResponse {
  if (h === undefined || h === 'logAndFail') return 'FAIL'
  if (h === 'logAndContinue') return 'CONTINUE'
  return h(record, error)
}

export function productionResponse(h: ProductionExceptionHandler | undefined, record: { topic: string }, error: unknown): HandlerResponse {
  if (h === undefined || h === 'fail') return 'FAIL'
  if (h === 'continue') return 'CONTINUE'
  return h(record, error)
}
