import { read } from 'node:fs'
import { setImmediate as yieldToLoop } from 'node:timers/promises'
import { LOG_OVERHEAD, RECORD_BATCH_OVERHEAD } from '@tidelog/protocol'
import { BATCH_LENGTH_AT } from '../format.js'
import type { LogSegment } from '../segment.js'

const CHUNK = 1024 * 1024

/** Reads into `buf` off the event loop, holding the segment so a deletion meanwhile cannot close it. */
function readInto(seg: LogSegment, buf: Buffer, length: number, position: number): Promise<number> {
  seg.retain()
  return new Promise<number>((resolve, reject) => {
    let done = 0
    const step = (): void => {
      read(seg.fd, buf, done, length - done, position + done, (err, n) => {
        if (err !== null) {
          seg.release()
          reject(err)
        } else if (n === 0 || done + n === length) {
          seg.release()
          resolve(done + n)
        } else {
          done += n
          step()
        }
      })
    }
    step()
  })
}

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
    let chunk = scratch.subarray(0, await readInto(seg, scratch, Math.min(CHUNK, end - pos), pos))
    if (chunk.length < LOG_OVERHEAD) return
    const first = LOG_OVERHEAD + chunk.readInt32BE(BATCH_LENGTH_AT)
    if (first < RECORD_BATCH_OVERHEAD) return
    if (first > chunk.length) {
      if (pos + first > end) return
      const whole = Buffer.allocUnsafe(first)
      chunk = whole.subarray(0, await readInto(seg, whole, first, pos))
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
