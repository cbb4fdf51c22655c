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
import { OpenFileLimiter } from './open-files.js'
import { DEFAULT_LOG_CONFIG, type LogConfig, PartitionLog } from './partition-log.js'
import { DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS } from './producer-state.js'
import { LogCleaner } from './cleaner.js'

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
  /**
   * Whether the topic metadata still lists this partition. A directory renamed
   * aside for deletion whose partition is still listed belongs to a deletion
   * that never committed (a crash came first): it is renamed back. Without
   * this, every leftover is removed.
   */
  isLive?: (topic: string, partition: number) => boolean
  /** Kafka's producer.id.expiration.ms (default one day). */
  producerIdExpirationMs?: number
  /** Kafka's producer.id.expiration.check.interval.ms (default ten minutes). */
  producerIdExpirationCheckIntervalMs?: number
  /** The most segment files open at once (not a Kafka setting; default 1000). */
  maxOpenFiles?: number
  /** log.cleaner.enable (default true): compacted topics are cleaned in the background. */
  cleanerEnable?: boolean
  /** log.cleaner.backoff.ms (default 15 s). */
  cleanerBackoffMs?: number
  /** log.cleaner.dedupe.buffer.size (default 128 MiB). */
  cleanerDedupeBufferSize?: number
  /** log.cleaner.io.max.bytes.per.second (default: no cap). */
  cleanerIoMaxBytesPerSecond?: number
  /** log.cleaner.io.buffer.load.factor (default 0.9). */
  cleanerLoadFactor?: number
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
  /** Background file work (removals of deleted partitions, metadata writes) that close() waits for. */
  private readonly background = new Set<Promise<unknown>>()
  private readonly producerIdExpirationMs: number | undefined
  /** Caps the segment files held open by all the logs together. */
  readonly files: OpenFileLimiter
  /** Compacts the logs whose cleanup.policy has compact (Kafka's LogCleaner). */
  readonly cleaner: LogCleaner

  private constructor(opts: LogManagerOptions, lock: DataDirLock, clean: boolean) {
    this.dataDir = resolve(opts.dataDir)
    this.defaults = { ...DEFAULT_LOG_CONFIG, ...opts.config }
    this.logger = opts.logger ?? silentLogger
    this.onAppend = opts.onAppend
    this.lock = lock
    this.cleanStart = clean
    this.fs = opts.fs ?? defaultFileSystem
    this.dirState = new LogDirState(this.dataDir, this.logger)
    this.producerIdExpirationMs = opts.producerIdExpirationMs
    this.files = new OpenFileLimiter(opts.maxOpenFiles ?? 1000)
    this.cleaner = new LogCleaner({
      dataDir: this.dataDir,
      fs: this.fs,
      dirState: this.dirState,
      logs: () => this.logs.values(),
      logger: this.logger,
      ...(opts.cleanerBackoffMs !== undefined ? { backoffMs: opts.cleanerBackoffMs } : {}),
      ...(opts.cleanerDedupeBufferSize !== undefined ? { dedupeBufferSize: opts.cleanerDedupeBufferSize } : {}),
      ...(opts.cleanerIoMaxBytesPerSecond !== undefined ? { maxBytesPerSecond: opts.cleanerIoMaxBytesPerSecond } : {}),
      ...(opts.cleanerLoadFactor !== undefined ? { loadFactor: opts.cleanerLoadFactor } : {}),
    })
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
      const leftovers = mgr.settleDeletions(readdirSync(dataDir), opts.isLive)
      for (const name of readdirSync(dataDir)) {
        const path = join(dataDir, name)
        if (name.endsWith(DELETE_DIR_SUFFIX)) continue
        const tp = parsePartitionDirName(name)
        if (tp === undefined || !statSync(path).isDirectory()) continue
        const log = PartitionLog.open({
          dir: path,
          topic: tp.topic,
          partition: tp.partition,
          config: mgr.defaults,
          // A directory renamed back from an uncommitted deletion was open when the process died.
          clean: clean && !leftovers.restored.has(name),
          recoveryPoint: recoveryPoints.get(name)?.offset ?? 0,
          logStartOffset: logStarts.get(name)?.offset ?? 0,
          logger,
          fs: mgr.fs,
          dirState: mgr.dirState,
          files: mgr.files,
          ...(mgr.producerIdExpirationMs !== undefined ? { producerIdExpirationMs: mgr.producerIdExpirationMs } : {}),
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
      for (const path of leftovers.remove) mgr.removeInBackground(path)
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
          files: this.files,
          ...(this.producerIdExpirationMs !== undefined ? { producerIdExpirationMs: this.producerIdExpirationMs } : {}),
        })
      } catch (err) {
        // Only a failed file call is the disk's fault; anything else is reported as it is.
        if (typeof (err as NodeJS.ErrnoException).code !== 'string') throw err
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
   * `<topic>-<partition>.<uniqueId>-delete` at once, whole (one atomic rename,
   * so a crash never leaves part of a partition under its real name), and
   * removed on the libuv pool once `committed` resolves (the topic metadata
   * that no longer lists it is durable). Until then the rename is undone by a
   * restart that finds the partition still listed. Readers holding a segment
   * finish first.
   */
  deletePartition(topic: string, partition: number, committed: Promise<void> = Promise.resolve()): boolean {
    const name = partitionDirName(topic, partition)
    const log = this.logs.get(name)
    if (log === undefined) return false
    this.logs.delete(name)
    this.cleaner.forget(topic, partition)
    log.discard()
    // Long polls waiting on it read again now and answer UNKNOWN_TOPIC_OR_PARTITION, as
    // Kafka completes a DelayedFetch whose partition went away, instead of at max_wait_ms.
    this.onAppend?.(log)
    const aside = join(this.dataDir, `${name}.${randomUUID().replaceAll('-', '')}${DELETE_DIR_SUFFIX}`)
    try {
      this.fs.renameSync(log.dir, aside)
    } catch (err) {
      throw this.dirState.fail(err, `renaming ${name} for deletion`)
    }
    this.removeInBackground(aside, committed)
    return true
  }

  /**
   * Sorts the directories renamed aside by earlier deletions: those whose
   * partition is still live are renamed back (the newest, if a partition was
   * deleted more than once), the others are to be removed.
   */
  private settleDeletions(names: string[], isLive?: (topic: string, partition: number) => boolean): { remove: string[]; restored: Set<string> } {
    const remove: string[] = []
    const restored = new Set<string>()
    const candidates = new Map<string, { path: string; changed: number }[]>()
    const present = new Set(names)
    for (const name of names) {
      if (!name.endsWith(DELETE_DIR_SUFFIX)) continue
      const path = join(this.dataDir, name)
      const dot = name.lastIndexOf('.')
      const tp = dot > 0 ? parsePartitionDirName(name.slice(0, dot)) : undefined
      if (tp === undefined || isLive === undefined || !isLive(tp.topic, tp.partition) || present.has(name.slice(0, dot))) {
        remove.push(path)
        continue
      }
      const list = candidates.get(name.slice(0, dot)) ?? []
      list.push({ path, changed: statSync(path).ctimeMs })
      candidates.set(name.slice(0, dot), list)
    }
    for (const [name, list] of candidates) {
      list.sort((a, b) => b.changed - a.changed)
      this.logger.warn(`${name}: its deletion never committed (the topic is still listed); restoring it`)
      this.fs.renameSync(list[0]!.path, join(this.dataDir, name))
      restored.add(name)
      for (const other of list.slice(1)) remove.push(other.path)
    }
    if (restored.size > 0) fsyncDirSync(this.dataDir)
    return { remove, restored }
  }

  /** Resolves once the background work started so far (removing deleted partitions' directories, ...) is done. */
  async backgroundDone(): Promise<void> {
    while (this.background.size > 0) await Promise.allSettled([...this.background])
  }

  /** Has close() wait for `work` before releasing the data directory. */
  track(work: Promise<unknown>): void {
    const settled = work.then(
      () => {},
      () => {},
    )
    this.background.add(settled)
    void settled.finally(() => this.background.delete(settled))
  }

  private removeInBackground(path: string, committed: Promise<void> = Promise.resolve()): void {
    const run = (async () => {
      await committed
      // The rename is durable first, so a crash cannot bring the old name back.
      await fsyncDirAsync(this.fs, this.dataDir)
      await rmAsync(this.fs, path)
    })().catch((err: unknown) => this.logger.warn(`did not remove ${path} (the next start settles it): ${String(err)}`))
    this.track(run)
  }

  /** Forgets idle idempotent producers in every partition (producer.id.expiration.ms). Returns how many. */
  removeExpiredProducers(now = Date.now()): number {
    let n = 0
    for (const log of this.logs.values()) n += log.removeExpiredProducers(now)
    if (n > 0) this.logger.debug(`expired ${n} idle producer id(s)`)
    return n
  }

  /** Applies retention to every partition now. Returns the segments deleted. */
  runRetention(now = Date.now()): number {
    // An offline directory is left exactly as the failure found it.
    if (this.dirState.offline) return 0
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
    await this.cleaner.close()
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
    await this.backgroundDone()
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
    if (opts.cleanerEnable !== false) this.cleaner.start()
    every(opts.checkpointIntervalMs ?? 60_000, () => void this.checkpoint().catch(() => {}))
    every(opts.producerIdExpirationCheckIntervalMs ?? DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS, () => this.removeExpiredProducers())
    // The flush.ms policy and prompt log-start-offset checkpoints after DeleteRecords.
    every(Math.max(10, Math.min(1000, this.defaults.flushMs)), () => this.tick())
  }

  private tick(): void {
    if (this.dirState.offline) return
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
