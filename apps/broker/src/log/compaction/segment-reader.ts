import { setImmediate as yieldToLoop } from 'node:timers/promises'
import { LOG_OVERHEAD, RECORD_BATCH_OVERHEAD } from '@tidelog/protocol'
import { BATCH_LENGTH_AT } from '../format.js'
import type { LogSegment } from '../segment.js'

const CHUNK = 1024 * 1024

/**
 * The batches of a segment, read off the event loop in chunks of about 1 MiB
 * into one buffer reused for the whole walk (a fresh megabyte per read would
 * have the garbage collector run full collections for the external memory).
 * A yielded batch is valid until the next one is asked for; a batch larger
 * than a chunk is read whole into its own buffer.
 */
export async function* segmentBatches(seg: LogSegment, end = seg.size): AsyncGenerator<Buffer> {
  const scratch = Buffer.allocUnsafe(CHUNK)
  let pos = 0
  while (pos + RECORD_BATCH_OVERHEAD <= end) {
    let chunk = await seg.read(pos, Math.min(CHUNK, end - pos), scratch)
    if (chunk.length < LOG_OVERHEAD) return
    const first = LOG_OVERHEAD + chunk.readInt32BE(BATCH_LENGTH_AT)
    if (first < RECORD_BATCH_OVERHEAD) return
    if (first > chunk.length) {
      if (pos + first > end) return
      chunk = await seg.read(pos, first)
      if (chunk.length < first) return
    }
    let p = 0
    while (p + LOG_OVERHEAD <= chunk.length) {
      const size = LOG_OVERHEAD + chunk.readInt32BE(p + BATCH_LENGTH_AT)
      if (size < RECORD_BATCH_OVERHEAD || p + size > chunk.length) break
      yield chunk.subarray(p, p + size)
      p += size
    }
    pos += p
  }
}

/**
 * Yields to the event loop once `budgetMs` of synchronous work has gone by,
 * so a long cleaning never holds up requests for longer than that.
 */
export class Pacer {
  private last = performance.now()
  constructor(private readonly budgetMs = 4) {}

  async tick(): Promise<void> {
    if (performance.now() - this.last < this.budgetMs) return
    await yieldToLoop()
    this.last = performance.now()
  }
}
