import { randomUUID } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, statSync, unlinkSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { Logger } from '../logger.js'
import { silentLogger } from '../logger.js'
import { type Checkpoint, formatCheckpoint, fsyncDirSync, readCheckpoint, writeFileAtomicSync } from './checkpoint.js'
import { LogDirState } from './dir-failure.js'
import { LogClosedError } from './errors.js'
import { type LogFileSystem, defaultFileSystem, fsyncDirAsync, rmAsync, writeFileAtomicWith } from './file-system.js'
import { partitionDirName, parsePartitionDirName } from './format.js'
import { type DataDirLock, lockDataDir } from './lock.js'
import { DEFAULT_LOG_CONFIG, type LogConfig, PartitionLog } from './partition-log.js'

export const RECOVERY_POINT_CHECKPOINT = 'recovery-point-offset-checkpoint'
export const LOG_START_OFFSET_CHECKPOINT = 'log-start-offset-checkpoint'
export const CLEAN_SHUTDOWN_MARKER = '.clean-shutdown'
/** Kafka's suffix for a partition directory renamed aside for deletion: `<topic>-<partition>.<uniqueId>-delete`. */
export const DELETE_DIR_SUFFIX = '-delete'

export interface LogManagerOptions {
  dataDir: string
  /** Defaults for every partition; per-partition overrides go to create/getOrCreate. */
  config?: Partial<LogConfig>
  logger?: Logger
  /** How often retention runs (Kafka's log.retention.check.interval.ms is 5 min; segments here are often small). */
  retentionCheckIntervalMs?: number
  /** How often the recovery-point and log-start-offset checkpoints are written (Kafka: 60 s). */
  checkpointIntervalMs?: number
  /** Set as every log's onAppend (wakes long-polling fetches). */
  onAppend?: (log: PartitionLog) => void
  /** The file calls of the write side; tests inject failing or slow ones. */
  fs?: LogFileSystem
}

/**
 * All partition logs of a data directory, and what they share: the directory
 * lock, the checkpoint files, the clean-shutdown marker, and the timers that
 * apply retention, the flush.ms policy and checkpointing.
 */
export class LogManager {
  readonly dataDir: string
  /** The previous run shut down cleanly (its marker was found). */
  readonly cleanStart: boolean
  readonly defaults: LogConfig
  private readonly logs = new Map<string, PartitionLog>()
  private readonly logger: Logger
  private readonly onAppend: ((log: PartitionLog) => void) | undefined
  private readonly lock: DataDirLock
  private readonly timers: NodeJS.Timeout[] = []
  private checkpointing: Promise<void> = Promise.resolve()
  private closed = false
  readonly fs: LogFileSystem
  /** Offline after the first storage failure (see LogDirState). */
  readonly dirState: LogDirState
  /** Directories renamed aside for deletion and still being removed. */
  private readonly removals = new Set<Promise<void>>()

  private constructor(opts: LogManagerOptions, lock: DataDirLock, clean: boolean) {
    this.dataDir = resolve(opts.dataDir)
    this.defaults = { ...DEFAULT_LOG_CONFIG, ...opts.config }
    this.logger = opts.logger ?? silentLogger
    this.onAppend = opts.onAppend
    this.lock = lock
    this.cleanStart = clean
    this.fs = opts.fs ?? defaultFileSystem
    this.dirState = new LogDirState(this.dataDir, this.logger)
  }

  /** The data directory was taken offline by a failed write or fsync. */
  get offline(): boolean {
    return this.dirState.offline
  }

  /**
   * Locks the data directory and opens every partition in it, recovering those
   * that need it (see PartitionLog.open). The clean-shutdown marker is removed
   * once everything is loaded, so a crash from here on is seen as unclean.
   */
  static open(opts: LogManagerOptions): LogManager {
    const dataDir = resolve(opts.dataDir)
    mkdirSync(dataDir, { recursive: true })
    const lock = lockDataDir(dataDir)
    let mgr: LogManager | undefined
    try {
      const marker = join(dataDir, CLEAN_SHUTDOWN_MARKER)
      const clean = existsSync(marker)
      mgr = new LogManager(opts, lock, clean)
      const logger = mgr.logger
      const read = (file: string): Checkpoint => {
        try {
          return readCheckpoint(join(dataDir, file))
        } catch (err) {
          // Without it, recovery simply starts from the beginning of each log.
          logger.warn(`ignoring ${file}: ${(err as Error).message}`)
          return new Map()
        }
      }
      const recoveryPoints = read(RECOVERY_POINT_CHECKPOINT)
      const logStarts = read(LOG_START_OFFSET_CHECKPOINT)
      const started = Date.now()
      let recovered = 0
      const leftovers: string[] = []
      for (const name of readdirSync(dataDir)) {
        const path = join(dataDir, name)
        if (name.endsWith(DELETE_DIR_SUFFIX)) {
          // A deletion the previous run had committed but not finished.
          leftovers.push(path)
          continue
        }
        const tp = parsePartitionDirName(name)
        if (tp === undefined || !statSync(path).isDirectory()) continue
        const log = PartitionLog.open({
          dir: path,
          topic: tp.topic,
          partition: tp.partition,
          config: mgr.defaults,
          clean,
          recoveryPoint: recoveryPoints.get(name)?.offset ?? 0,
          logStartOffset: logStarts.get(name)?.offset ?? 0,
          logger,
          fs: mgr.fs,
          dirState: mgr.dirState,
        })
        recovered += log.recovery.recoveredSegments
        log.onAppend = mgr.onAppend
        mgr.logs.set(name, log)
      }
      const how = clean ? ' (clean shutdown)' : mgr.logs.size > 0 ? `; re-read ${recovered} segment(s) after an unclean shutdown` : ''
      logger.info(`loaded ${mgr.logs.size} partition(s) from ${dataDir} in ${Date.now() - started} ms${how}`)
      if (clean) {
        unlinkSync(marker)
        fsyncDirSync(dataDir)
      }
      // Recovery may have moved recovery points; record them before taking writes.
      mgr.writeCheckpointsSync()
      for (const path of leftovers) mgr.removeInBackground(path)
      mgr.startTimers(opts)
      return mgr
    } catch (err) {
      if (mgr !== undefined) for (const log of mgr.logs.values()) void log.close().catch(() => {})
      lock.release()
      throw err
    }
  }

  get(topic: string, partition: number): PartitionLog | undefined {
    return this.logs.get(partitionDirName(topic, partition))
  }

  /** Opens the partition's log, creating its directory if needed. */
  getOrCreate(topic: string, partition: number, config?: Partial<LogConfig>): PartitionLog {
    if (this.closed) throw new LogClosedError('log manager')
    const name = partitionDirName(topic, partition)
    let log = this.logs.get(name)
    if (log === undefined) {
      this.dirState.check()
      try {
        log = PartitionLog.open({
          dir: join(this.dataDir, name),
          topic,
          partition,
          config: { ...this.defaults, ...config },
          clean: true,
          logger: this.logger,
          fs: this.fs,
          dirState: this.dirState,
        })
      } catch (err) {
        throw this.dirState.fail(err, `creating ${name}`)
      }
      log.onAppend = this.onAppend
      this.logs.set(name, log)
    } else if (config !== undefined) {
      log.config = { ...this.defaults, ...config }
    }
    return log
  }

  all(): IterableIterator<PartitionLog> {
    return this.logs.values()
  }

  /**
   * Deletes a partition's log, as Kafka does: the directory is renamed to
   * `<topic>-<partition>.<uniqueId>-delete` at once (one atomic rename, so a
   * crash never leaves half a partition under its real name, and the next start
   * removes what is left), then removed on the libuv pool. Readers holding a
   * segment finish first.
   */
  deletePartition(topic: string, partition: number): boolean {
    const name = partitionDirName(topic, partition)
    const log = this.logs.get(name)
    if (log === undefined) return false
    this.logs.delete(name)
    log.deleteAll()
    const aside = join(this.dataDir, `${name}.${randomUUID().replaceAll('-', '')}${DELETE_DIR_SUFFIX}`)
    try {
      this.fs.renameSync(log.dir, aside)
    } catch (err) {
      throw this.dirState.fail(err, `renaming ${name} for deletion`)
    }
    this.removeInBackground(aside)
    return true
  }

  /** Resolves once every directory renamed aside so far is gone. */
  async removalsDone(): Promise<void> {
    while (this.removals.size > 0) await Promise.all([...this.removals])
  }

  private removeInBackground(path: string): void {
    const run = (async () => {
      // The rename is durable first, so a crash cannot bring the old name back.
      await fsyncDirAsync(this.fs, this.dataDir)
      await rmAsync(this.fs, path)
    })().catch((err: unknown) => this.logger.warn(`could not remove ${path} (removed on the next start): ${String(err)}`))
    this.removals.add(run)
    void run.finally(() => this.removals.delete(run))
  }

  /** Applies retention to every partition now. Returns the segments deleted. */
  runRetention(now = Date.now()): number {
    let n = 0
    for (const log of this.logs.values()) {
      try {
        n += log.deleteOldSegments(now)
      } catch (err) {
        this.logger.error(`${log.topic}-${log.partition}: retention failed: ${String(err)}`)
      }
    }
    if (n > 0) void this.checkpoint()
    return n
  }

  /**
   * Writes the recovery-point and log-start-offset checkpoints (temp file,
   * fsync, rename). Calls are serialised; each writes the state at its turn.
   */
  checkpoint(): Promise<void> {
    const run = this.checkpointing.then(async () => {
      if (this.closed || this.dirState.offline) return
      const { recovery, starts } = this.checkpointContents()
      try {
        await writeFileAtomicWith(this.fs, join(this.dataDir, RECOVERY_POINT_CHECKPOINT), recovery)
        await writeFileAtomicWith(this.fs, join(this.dataDir, LOG_START_OFFSET_CHECKPOINT), starts)
      } catch (err) {
        throw this.dirState.fail(err, 'writing the checkpoints')
      }
    })
    this.checkpointing = run.catch((err: unknown) => this.logger.error(`checkpoint failed: ${String(err)}`))
    return run
  }

  /**
   * Stops the timers, flushes and closes every log, writes the checkpoints and
   * the clean-shutdown marker, and releases the lock.
   */
  async close(): Promise<void> {
    if (this.closed) return
    for (const t of this.timers) clearInterval(t)
    await this.checkpointing
    const errors: unknown[] = []
    await Promise.all(
      [...this.logs.values()].map((log) =>
        log.close().catch((err: unknown) => {
          // An offline directory's logs all refuse alike; the failure was logged when it happened.
          if (this.dirState.offline) return
          errors.push(err)
          this.logger.error(`${log.topic}-${log.partition}: close failed: ${String(err)}`)
        }),
      ),
    )
    this.closed = true
    await this.removalsDone()
    try {
      // A failed directory gets nothing more written; the next start recovers it as unclean.
      if (this.dirState.offline) return
      this.writeCheckpointsSync()
      // Only a shutdown that flushed everything may claim to be clean.
      if (errors.length === 0) writeFileAtomicSync(join(this.dataDir, CLEAN_SHUTDOWN_MARKER), '')
    } finally {
      this.lock.release()
    }
    if (errors.length > 0) throw errors[0]
  }

  private checkpointContents(): { recovery: string; starts: string } {
    const logs = [...this.logs.values()]
    return {
      recovery: formatCheckpoint(logs.map((l) => ({ topic: l.topic, partition: l.partition, offset: l.recoveryPoint }))),
      starts: formatCheckpoint(logs.map((l) => ({ topic: l.topic, partition: l.partition, offset: l.logStartOffset }))),
    }
  }

  private writeCheckpointsSync(): void {
    const { recovery, starts } = this.checkpointContents()
    writeFileAtomicSync(join(this.dataDir, RECOVERY_POINT_CHECKPOINT), recovery)
    writeFileAtomicSync(join(this.dataDir, LOG_START_OFFSET_CHECKPOINT), starts)
    for (const l of this.logs.values()) l.logStartOffsetDirty = false
  }

  private startTimers(opts: LogManagerOptions): void {
    const every = (ms: number, fn: () => void): void => {
      const t = setInterval(fn, ms)
      t.unref()
      this.timers.push(t)
    }
    every(opts.retentionCheckIntervalMs ?? 5000, () => this.runRetention())
    every(opts.checkpointIntervalMs ?? 60_000, () => void this.checkpoint().catch(() => {}))
    // The flush.ms policy and prompt log-start-offset checkpoints after DeleteRecords.
    every(Math.max(10, Math.min(1000, this.defaults.flushMs)), () => this.tick())
  }

  private tick(): void {
    const now = Date.now()
    let startMoved = false
    for (const log of this.logs.values()) {
      if (log.logStartOffsetDirty) {
        log.logStartOffsetDirty = false
        startMoved = true
      }
      if (log.unflushedMessages > 0 && now - log.lastFlushTime >= log.config.flushMs) {
        log.flush().catch((err: unknown) => this.logger.error(`${log.topic}-${log.partition}: flush failed: ${String(err)}`))
      }
    }
    if (startMoved) void this.checkpoint().catch(() => {})
  }
}
