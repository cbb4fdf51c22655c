import { EventEmitter } from 'node:events'
import { KafkaJSNonRetriableError } from './errors.js'
import type { Logger } from './logger.js'
import { networkListener, WireTap, type WireListener } from './network-events.js'
import type { InstrumentationEvent, RemoveInstrumentationEventListener } from './types.js'

// kafkajs numbers events with one process-wide counter.
let nextId = 0

export const producerEvents = {
  CONNECT: 'producer.connect',
  DISCONNECT: 'producer.disconnect',
  REQUEST: 'producer.network.request',
  REQUEST_TIMEOUT: 'producer.network.request_timeout',
  REQUEST_QUEUE_SIZE: 'producer.network.request_queue_size',
} as const

export const adminEvents = {
  CONNECT: 'admin.connect',
  DISCONNECT: 'admin.disconnect',
  REQUEST: 'admin.network.request',
  REQUEST_TIMEOUT: 'admin.network.request_timeout',
  REQUEST_QUEUE_SIZE: 'admin.network.request_queue_size',
} as const

export const consumerEvents = {
  HEARTBEAT: 'consumer.heartbeat',
  COMMIT_OFFSETS: 'consumer.commit_offsets',
  GROUP_JOIN: 'consumer.group_join',
  FETCH_START: 'consumer.fetch_start',
  FETCH: 'consumer.fetch',
  START_BATCH_PROCESS: 'consumer.start_batch_process',
  END_BATCH_PROCESS: 'consumer.end_batch_process',
  CONNECT: 'consumer.connect',
  DISCONNECT: 'consumer.disconnect',
  STOP: 'consumer.stop',
  CRASH: 'consumer.crash',
  REBALANCING: 'consumer.rebalancing',
  RECEIVED_UNSUBSCRIBED_TOPICS: 'consumer.received_unsubscribed_topics',
  REQUEST: 'consumer.network.request',
  REQUEST_TIMEOUT: 'consumer.network.request_timeout',
  REQUEST_QUEUE_SIZE: 'consumer.network.request_queue_size',
} as const

/**
 * kafkajs' instrumentation emitter: `on()` accepts only the component's event names (a typo is
 * an error, not a listener that never fires) and an event object is built only when someone
 * listens. A throwing listener is logged, never allowed to break the client.
 */
export class Instrumentation<Names extends Record<string, string>> {
  private readonly emitter = new EventEmitter()
  private readonly valid: Set<string>
  private readonly tap: WireTap
  /** Events made from this component's requests: the tap listens only while one has a listener. */
  private readonly wireNames: Set<string>
  private connected = false

  constructor(readonly events: Names & { REQUEST: string; REQUEST_TIMEOUT: string; REQUEST_QUEUE_SIZE: string }, private readonly component: 'producer' | 'consumer' | 'admin', private readonly logger: Logger) {
    this.valid = new Set(Object.values(events))
    this.tap = new WireTap([networkListener(events, (name, payload) => this.emit(name, payload))])
    this.wireNames = new Set([events.REQUEST, events.REQUEST_TIMEOUT, events.REQUEST_QUEUE_SIZE])
  }

  /** The ClientOptions.diagnosticsTag of this component's native clients. */
  get tag(): object {
    return this.tap.tag
  }

  /** More events made from the component's requests (the consumer's FETCH, HEARTBEAT). */
  addWire(names: readonly string[], listener: WireListener): void {
    for (const n of names) this.wireNames.add(n)
    this.tap.add(listener)
    this.syncTap()
  }

  /** Between connect() and disconnect(): requests only happen then, and a dropped client is not held by the channels. */
  setConnected(connected: boolean): void {
    this.connected = connected
    this.syncTap()
  }

  private syncTap(): void {
    let wanted = false
    if (this.connected) for (const n of this.wireNames) if (this.emitter.listenerCount(n) > 0) wanted = true
    this.tap.set(wanted)
  }

  on(eventName: string, listener: (event: InstrumentationEvent<any>) => void): RemoveInstrumentationEventListener {
    if (!this.valid.has(eventName)) {
      throw new KafkaJSNonRetriableError(`Event name should be one of ${Object.keys(this.events).map((k) => `${this.component}.events.${k}`).join(', ')}`)
    }
    const wrapped = (event: InstrumentationEvent<unknown>) => {
      try {
        listener(event)
      } catch (e) {
        this.logger.error('Instrumentation listener threw', { eventName, error: (e as Error).message })
      }
    }
    this.emitter.on(eventName, wrapped)
    this.syncTap()
    return () => {
      this.emitter.off(eventName, wrapped)
      this.syncTap()
    }
  }

  /** The package's own listener: counted like a user's, so the event is always built for it. */
  onInternal(eventName: string, listener: () => void): () => void {
    this.emitter.on(eventName, listener)
    return () => void this.emitter.off(eventName, listener)
  }

  listening(eventName: string): boolean {
    return this.emitter.listenerCount(eventName) > 0
  }

  /** `payload` is a function so nothing is built for events nobody listens to. */
  emit<T>(eventName: string, payload: T | (() => T)): void {
    if (this.emitter.listenerCount(eventName) === 0) return
    const value = typeof payload === 'function' ? (payload as () => T)() : payload
    const event: InstrumentationEvent<T> = { id: nextId++, type: eventName, timestamp: Date.now(), payload: value }
    this.emitter.emit(eventName, event)
  }
}
