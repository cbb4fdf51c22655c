import type { Logger, Serde } from '@tidelog/client'

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
  /** at_least_once (the default) or exactly_once_v2 (KIP-447: one transactional producer per stream thread). */
  'processing.guarantee'?: 'at_least_once' | 'exactly_once_v2'
  'commit.interval.ms'?: number
  'num.stream.threads'?: number
  'replication.factor'?: number
  /** host:port where this instance answers interactive queries (advertised to the other instances). */
  'application.server'?: string
  'default.deserialization.exception.handler'?: DeserializationExceptionHandler
  'default.production.exception.handler'?: ProductionExceptionHandler
  /** Where task directories and their `.checkpoint` files live (default `<os tmpdir>/kafka-streams`, as Java's). */
  'state.dir'?: string
  /**
   * The engine of DSL stores without a supplier or store type (Java's default.dsl.store, KIP-591):
   * 'rocksDB' makes them persistent (LMDB here), 'in_memory' (our default) keeps them in memory.
   */
  'default.dsl.store'?: 'rocksDB' | 'in_memory'
  /**
   * Bytes of record cache per stream thread (Java's statestore.cache.max.bytes). Our default is 0
   * (no caching, every update forwarded); Java's is 10485760.
   */
  'statestore.cache.max.bytes'?: number
  /** Prefix of the clients' ids (default `<application.id>-<processId>`). */
  'client.id'?: string
  /** How often repartition topics are purged after a commit (KIP-811; default 30000). */
  'repartition.purge.interval.ms'?: number
  /** The transactional producers' transaction.timeout.ms under exactly_once_v2 (Kafka Streams sets 10000). */
  'transaction.timeout.ms'?: number
  /** The main consumers' session.timeout.ms (default 45000): how soon a killed instance's tasks move. */
  'session.timeout.ms'?: number
  /** The main consumers' heartbeat.interval.ms (default 3000). */
  'heartbeat.interval.ms'?: number
  /** Static membership (KIP-345): each thread's consumer joins as `<group.instance.id>-<threadIdx>`, so a restart takes its tasks back without a rebalance. */
  'group.instance.id'?: string
  /** Standby replicas per stateful task (default 0): warm copies of its stores on other instances, read from the changelog. */
  'num.standby.replicas'?: number
  /**
   * KIP-441: how many changelog records behind a client may be and still count as caught up on a
   * task (default 10000, as Java). An active stateful task is only moved to a caught-up client;
   * meanwhile its new owner gets a warm-up replica.
   */
  'acceptable.recovery.lag'?: number
  /** KIP-441: warm-up replicas handed out per assignment, beyond num.standby.replicas (default 2, at least 1). */
  'max.warmup.replicas'?: number
  /** KIP-441: while warm-ups catch up, how often the group rebalances to check on them (default 600000, at least 60000). */
  'probing.rebalance.interval.ms'?: number
  /**
   * Not a Java config: probing.rebalance.interval.ms without its one-minute minimum, for tests
   * (Java's own tests wait out the minute, or drive the assignor directly).
   */
  '__probing.rebalance.interval.ms__'?: number
  /**
   * KIP-708: client tag keys (at most 5, each set with a client.tag.* config) over which standby
   * replicas are spread: a replica goes to a client whose values differ from the active's.
   */
  'rack.aware.assignment.tags'?: string | string[]
  /** KIP-708: this instance's client tags, `client.tag.<key>` (at most 5; keys up to 20, values up to 30 characters). */
  [clientTag: `client.tag.${string}`]: string | undefined
  /** Where the clients log (default: silent). */
  logger?: Logger
}

/** Java's StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse (SHUTDOWN_APPLICATION stops every instance of the application, KIP-671). */
export type StreamThreadExceptionResponse = 'REPLACE_THREAD' | 'SHUTDOWN_CLIENT' | 'SHUTDOWN_APPLICATION'

/** Java's StreamsUncaughtExceptionHandler: what a stream thread's fatal error does. */
export type StreamsUncaughtExceptionHandler = (error: unknown) => StreamThreadExceptionResponse

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
