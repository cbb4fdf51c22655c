import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { LogDirState } from './log/dir-failure.js'
import { type LogFileSystem, defaultFileSystem, writeFileAtomicWith } from './log/file-system.js'

export const PRODUCER_IDS_FILE = 'producer-id-block'
const BLOCK = 1000

/**
 * Hands out producer ids that are never reused, even across crashes: ids come
 * from blocks, and the end of a block is made durable before the first id of
 * it is given out (as Kafka's controller allocates id blocks). The next block
 * is written in the background once half of the current one is used, off the
 * event loop, so InitProducerId rarely waits for the disk; one write at a time,
 * so the file never goes backwards.
 */
export class ProducerIdAllocator {
  private next: number
  /** Ids below it are covered by the durable file. */
  private durableEnd: number
  private extending: Promise<void> | undefined
  private readonly path: string

  constructor(
    dataDir: string,
    private readonly fs: LogFileSystem = defaultFileSystem,
    private readonly dirState?: LogDirState,
  ) {
    this.path = join(dataDir, PRODUCER_IDS_FILE)
    let start = 0
    try {
      const n = Number(readFileSync(this.path, 'utf8').trim())
      if (Number.isSafeInteger(n) && n >= 0) start = n
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    }
    this.next = start
    this.durableEnd = start
  }

  /** The next id; waits only when the block in use is exhausted before the next one is durable. */
  async allocate(): Promise<number> {
    while (this.next >= this.durableEnd) await this.extend()
    if (this.durableEnd - this.next <= BLOCK / 2) void this.extend().catch(() => {})
    return this.next++
  }

  private extend(): Promise<void> {
    this.extending ??= (async () => {
      const end = Math.max(this.durableEnd, this.next) + BLOCK
      try {
        this.dirState?.check()
        await writeFileAtomicWith(this.fs, this.path, `${end}\n`)
      } catch (err) {
        throw this.dirState?.fail(err, `writing ${PRODUCER_IDS_FILE}`) ?? err
      } finally {
        this.extending = undefined
      }
      this.durableEnd = end
    })()
    return this.extending
  }
}
