import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { writeFileAtomicSync } from './log/checkpoint.js'

export const PRODUCER_IDS_FILE = 'producer-id-block'
const BLOCK = 1000

/**
 * Hands out producer ids that are never reused, even across crashes: ids come
 * from blocks, and the end of the current block is made durable before the
 * first id of it is given out (as Kafka's controller allocates id blocks).
 */
export class ProducerIdAllocator {
  private next: number
  private blockEnd: number

  constructor(private readonly dataDir: string) {
    let start = 0
    try {
      const n = Number(readFileSync(join(dataDir, PRODUCER_IDS_FILE), 'utf8').trim())
      if (Number.isSafeInteger(n) && n >= 0) start = n
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    }
    this.next = start
    this.blockEnd = start
  }

  allocate(): number {
    if (this.next >= this.blockEnd) {
      this.blockEnd = this.next + BLOCK
      writeFileAtomicSync(join(this.dataDir, PRODUCER_IDS_FILE), `${this.blockEnd}\n`)
    }
    return this.next++
  }
}
