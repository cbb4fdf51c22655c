import { join } from 'node:path'
import type { Logger } from '../logger.js'
import { silentLogger } from '../logger.js'
import { formatCheckpoint, readCheckpoint } from './checkpoint.js'
import { type CleanOptions, type CleanResult, DEFAULT_DEDUPE_BUFFER_SIZE, cleanLog, isCleanable, planCleaning } from './compaction/clean-log.js'
import type { SwapStep } from './compaction/swap.js'
import type { LogDirState } from './dir-failure.js'
import { type LogFileSystem, writeFileAtomicWith } from './file-system.js'
import { partitionDirName } from './format.js'
import type { PartitionLog } from './partition-log.js'

/** Kafka's file of each compacted partition's first dirty offset. */
export const CLEANER_CHECKPOINT = 'cleaner-offset-checkpoint'
/** Kafka's log.cleaner.backoff.ms default. */
export const DEFAULT_CLEANER_BACKOFF_MS = 15_000

export interface LogCleanerOptions {
  dataDir: string
  fs: LogFileSystem
  dirState: LogDirState
  logs: () => Iterable<PartitionLog>
  logger?: Logger
  /** log.cleaner.backoff.ms: the pause when no log needs cleaning. */
  backoffMs?: number
  /** log.cleaner.dedupe.buffer.size */
  dedupeBufferSize?: number
  /** log.cleaner.io.buffer.load.factor */
  loadFactor?: number
  /** log.cleaner.io.max.bytes.per.second */
  maxBytesPerSecond?: number
  /** Tests stop the cleaner mid-swap here. */
  fault?: (step: SwapStep, base: number) => void
}

export interface CleanerPass extends CleanResult {
  topic: string
  partition: number
  ratio: number
}

/** What Kafka's LogCleaner and LogCleanerManager report of the last passes (their JMX gauges). */
export interface CleanerStats {
  /** max-clean-time-secs: the last pass's duration. */
  lastCleanSecs: number
  /** max-buffer-utilization-percent: the last pass's share of the key map used. */
  bufferUtilizationPercent: number
  /** cleaner-recopy-percent: bytes written / bytes read by the last pass. */
  recopyPercent: number
  /** max-dirty-percent: the dirty ratio of the log the last check chose (0 when none was cleanable). */
  maxDirtyPercent: number
  /** When the cleaner last looked for a log to clean (time-since-last-run-ms counts from it). */
  lastRunAt: number
}

/**
 * Kafka's LogCleaner with one cleaner thread: it picks the dirtiest compacted
 * log past its min.cleanable.dirty.ratio (or overdue by max.compaction.lag.ms)
 * and has the worker thread clean it (worker-client.ts), so the event loop only
 * plans and swaps; it writes the new first dirty offset to the cleaner
 * checkpoint, and waits log.cleaner.backoff.ms when nothing needs cleaning.
 */
export class LogCleaner {
  private readonly checkpoints: Map<string, number>
  private readonly logger: Logger
  private running: Promise<CleanerPass | undefined> = Promise.resolve(undefined)
  private timer: NodeJS.Timeout | undefined
  private stopped = false
  readonly stats: CleanerStats = { lastCleanSecs: 0, bufferUtilizationPercent: 0, recopyPercent: 0, maxDirtyPercent: 0, lastRunAt: Date.now() }
  /**
   * Partitions whose cleaning failed (an unreadable batch, a failed write): skipped from
   * then on, as Kafka marks them uncleanable, so one bad log cannot stall the others.
   */
  readonly uncleanable = new Set<string>()
  /** Passes finished since the start (tests wait on it). */
  passes = 0
  lastPass: CleanerPass | undefined

  constructor(private readonly opts: LogCleanerOptions) {
    this.logger = opts.logger ?? silentLogger
    let cp = new Map<string, number>()
    try {
      cp = new Map([...readCheckpoint(join(opts.dataDir, CLEANER_CHECKPOINT))].map(([k, v]) => [k, v.offset]))
    } catch (err) {
      // Without it every log is dirty from its start: cleaning again is safe.
      this.logger.warn(`ignoring ${CLEANER_CHECKPOINT}: ${(err as Error).message}`)
    }
    this.checkpoints = cp
  }

  /** The data directory whose logs it cleans (Kafka's metrics tag it logDirectory). */
  get dataDir(): string {
    return this.opts.dataDir
  }

  /** Bytes of the logs marked uncleanable (uncleanable-bytes). */
  uncleanableBytes(): number {
    let bytes = 0
    for (const log of this.opts.logs()) if (!log.isClosed && this.uncleanable.has(partitionDirName(log.topic, log.partition))) bytes += log.size
    return bytes
  }

  /** The first dirty offset the checkpoint holds for a log (0 when none). */
  firstDirtyOffset(log: PartitionLog): number {
    return this.checkpoints.get(partitionDirName(log.topic, log.partition)) ?? 0
  }

  /** A deleted partition's checkpoint goes with it: a topic created again under its name starts dirty from 0. */
  forget(topic: string, partition: number): void {
    this.checkpoints.delete(partitionDirName(topic, partition))
  }

  start(): void {
    if (this.stopped || this.timer !== undefined) return
    const loop = (): void => {
      this.timer = undefined
      if (this.stopped) return
      void this.cleanOnce().then(
        (pass) => {
          if (!this.stopped) this.timer = setTimeout(loop, pass === undefined ? (this.opts.backoffMs ?? DEFAULT_CLEANER_BACKOFF_MS) : 0)
          this.timer?.unref()
        },
        (err: unknown) => {
          this.logger.error(`log cleaner: ${String(err)}`)
          if (!this.stopped) this.timer = setTimeout(loop, this.opts.backoffMs ?? DEFAULT_CLEANER_BACKOFF_MS)
          this.timer?.unref()
        },
      )
    }
    this.timer = setTimeout(loop, 0)
    this.timer.unref()
  }

  /** Cleans the dirtiest cleanable log once; undefined when none needs it. Passes never overlap. */
  cleanOnce(now?: number): Promise<CleanerPass | undefined> {
    const run = this.running.then(() => this.pass(now ?? Date.now()), () => this.pass(now ?? Date.now()))
    this.running = run.catch(() => undefined)
    return run
  }

  /** Cleans until no log is cleanable (tests, tools). Returns the passes made. */
  async cleanAll(now?: number): Promise<CleanerPass[]> {
    const out: CleanerPass[] = []
    for (;;) {
      const failed = this.uncleanable.size
      const pass = await this.cleanOnce(now)
      if (pass !== undefined) out.push(pass)
      else if (this.uncleanable.size === failed) return out
    }
  }

  private async pass(now: number): Promise<CleanerPass | undefined> {
    if (this.stopped || this.opts.dirState.offline) return undefined
    this.stats.lastRunAt = Date.now()
    let best: { log: PartitionLog; plan: ReturnType<typeof planCleaning> } | undefined
    for (const log of this.opts.logs()) {
      if (!log.config.cleanupCompact || log.isClosed || this.uncleanable.has(partitionDirName(log.topic, log.partition))) continue
      const plan = planCleaning(log, this.firstDirtyOffset(log), now)
      if (!isCleanable(plan, log)) continue
      // Overdue logs first (KIP-354), then the dirtiest.
      if (best === undefined || (plan.needNow && !best.plan.needNow) || (plan.needNow === best.plan.needNow && plan.ratio > best.plan.ratio)) best = { log, plan }
    }
    this.stats.maxDirtyPercent = best === undefined ? 0 : Math.floor(100 * best.plan.ratio)
    if (best === undefined) return undefined
    const { log, plan } = best
    const started = performance.now()
    const opts: CleanOptions = { now, dedupeBufferSize: this.opts.dedupeBufferSize ?? DEFAULT_DEDUPE_BUFFER_SIZE, stopping: () => this.stopped }
    if (this.opts.loadFactor !== undefined) opts.loadFactor = this.opts.loadFactor
    if (this.opts.maxBytesPerSecond !== undefined) opts.maxBytesPerSecond = this.opts.maxBytesPerSecond
    if (this.opts.fault !== undefined) opts.fault = this.opts.fault
    let result: Awaited<ReturnType<typeof cleanLog>>
    try {
      result = await cleanLog(log, plan, opts)
    } catch (err) {
      if (this.opts.fault !== undefined || this.opts.dirState.offline) throw err
      this.uncleanable.add(partitionDirName(log.topic, log.partition))
      this.logger.error(`${log.topic}-${log.partition}: cleaning failed, the log is not cleaned again until a restart: ${String(err)}`)
      return undefined
    }
    if (result === undefined) return undefined
    this.checkpoints.set(partitionDirName(log.topic, log.partition), result.endOffset)
    await this.writeCheckpoint()
    const pass: CleanerPass = { ...result, topic: log.topic, partition: log.partition, ratio: plan.ratio }
    this.passes++
    this.lastPass = pass
    const ms = performance.now() - started
    this.stats.lastCleanSecs = ms / 1000
    this.stats.bufferUtilizationPercent = 100 * result.bufferUtilization
    this.stats.recopyPercent = (100 * result.bytesWritten) / Math.max(1, result.bytesRead)
    this.logger.info(
      `${log.topic}-${log.partition}: cleaned ${result.segmentsCleaned} segment(s) up to offset ${result.endOffset} in ${ms.toFixed(0)} ms ` +
        `(dirty ratio ${plan.ratio.toFixed(2)}${result.mapFull ? ', key map full: the rest next pass' : ''}, ${result.bytesRead} bytes read, ${result.bytesWritten} written, ${result.recordsRemoved} record(s) removed)`,
    )
    return pass
  }

  private async writeCheckpoint(): Promise<void> {
    const live = new Set<string>()
    const entries: { topic: string; partition: number; offset: number }[] = []
    for (const log of this.opts.logs()) {
      const name = partitionDirName(log.topic, log.partition)
      const offset = this.checkpoints.get(name)
      live.add(name)
      if (offset !== undefined) entries.push({ topic: log.topic, partition: log.partition, offset })
    }
    for (const name of [...this.checkpoints.keys()]) if (!live.has(name)) this.checkpoints.delete(name)
    try {
      await writeFileAtomicWith(this.opts.fs, join(this.opts.dataDir, CLEANER_CHECKPOINT), formatCheckpoint(entries))
    } catch (err) {
      throw this.opts.dirState.fail(err, `writing ${CLEANER_CHECKPOINT}`)
    }
  }

  /** Stops scheduling and waits for a pass under way (it gives up at its next slice once its log closes). */
  async close(): Promise<void> {
    this.stopped = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    await this.running
  }
}
