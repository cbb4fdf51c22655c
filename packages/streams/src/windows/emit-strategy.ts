import type { ProcessorContext } from '../processor.js'

/**
 * When a windowed aggregation emits (KIP-825, Java's kstream.EmitStrategy): on every update (the
 * default), or once per window, when it closes. Unlike suppress(), onWindowClose adds no node
 * and no buffer store: the aggregation itself reads the closed windows from its own store.
 */
export class EmitStrategy {
  private constructor(private readonly strategyType: 'ON_WINDOW_CLOSE' | 'ON_WINDOW_UPDATE') {}

  private static readonly close = new EmitStrategy('ON_WINDOW_CLOSE')
  private static readonly update = new EmitStrategy('ON_WINDOW_UPDATE')

  static onWindowClose(): EmitStrategy {
    return EmitStrategy.close
  }

  static onWindowUpdate(): EmitStrategy {
    return EmitStrategy.update
  }

  type(): 'ON_WINDOW_CLOSE' | 'ON_WINDOW_UPDATE' {
    return this.strategyType
  }
}

/** Java's StreamsConfig.InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_WINDOWED_AGGREGATION (TopologyTestDriver sets it to 0). */
export const WINDOWED_AGGREGATION_EMIT_INTERVAL = '__emit.interval.ms.kstreams.windowed.aggregation__'

/**
 * The emit-final bookkeeping of Java's AbstractKStreamTimeWindowAggregateProcessor: closed
 * windows are looked for at most once per emit interval of wall-clock time, and only when the
 * window close time has moved on since the last emission. The last close time is kept in the
 * task's processor metadata under the store's name, which is committed with the input offsets,
 * so a restarted task does not emit a window again.
 */
export class FinalEmitter {
  private last: number | undefined
  private nextTimeToEmit = 0
  private readonly intervalMs: number

  constructor(private readonly ctx: ProcessorContext<any, any>, private readonly storeName: string) {
    const configured = ctx.appConfigs?.()[WINDOWED_AGGREGATION_EMIT_INTERVAL]
    this.intervalMs = configured === undefined || configured === null ? 1000 : Number(configured)
    // Asked at init so the runtime knows to load the committed metadata; read again at first use, once it has.
    ctx.processorMetadataForKey?.(storeName)
  }

  /** Java's lastEmitWindowCloseTime; -1 (NO_TIMESTAMP) before the first emission. */
  get lastCloseTime(): number {
    if (this.last === undefined) this.last = this.ctx.processorMetadataForKey?.(this.storeName) ?? -1
    return this.last
  }

  set lastCloseTime(closeTime: number) {
    this.last = closeTime
    this.ctx.addProcessorMetadataKeyValue?.(this.storeName, closeTime)
  }

  shouldEmit(windowCloseTime: number): boolean {
    const now = this.ctx.currentSystemTimeMs()
    if (now < this.nextTimeToEmit) return false
    // From now, not from the last due time, so a jump of the system clock does not emit on every record.
    this.nextTimeToEmit = now + this.intervalMs
    return this.lastCloseTime === -1 || this.lastCloseTime < windowCloseTime
  }
}
