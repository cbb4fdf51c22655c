import { writeFileAtomicWith } from './log/file-system.js'
import type { LogManager } from './log/index.js'

/**
 * A small JSON file of broker state (topics.json, dynamic-configs.json) replaced
 * atomically off the event loop. Changes made while a write is under way are
 * coalesced into the next one, so a burst of changes costs two writes, not one
 * each. A failed write takes the data directory offline (KAFKA_STORAGE_ERROR), as
 * any other failed write to it does.
 */
export class DurableFile {
  /** The queue of writes: the last one started (settled or not), never rejecting. */
  private chain: Promise<void> = Promise.resolve()
  /** The write not yet started, shared by every change made since the last one started. */
  private next: Promise<void> | undefined
  private latest: Promise<void> = Promise.resolve()

  constructor(
    private readonly path: string,
    private readonly what: string,
    private readonly logs: LogManager,
    /** The file's content at the time the write starts. */
    private readonly contents: () => string,
  ) {}

  /** Resolves once every change saved so far is durable; rejects if that write failed. */
  persisted(): Promise<void> {
    return this.latest
  }

  /** Schedules a write of the current state; resolves when a write that includes it is durable. */
  save(): Promise<void> {
    if (this.next === undefined) {
      const run = this.chain.then(async () => {
        // From here on, changes need the write after this one.
        this.next = undefined
        this.logs.dirState.check()
        try {
          await writeFileAtomicWith(this.logs.fs, this.path, this.contents())
        } catch (err) {
          throw this.logs.dirState.fail(err, `writing ${this.what}`)
        }
      })
      this.next = run
      this.chain = run.catch(() => {})
      this.logs.track(run)
    }
    this.latest = this.next
    return this.next
  }
}
