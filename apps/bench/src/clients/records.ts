import type { Rec } from './adapter.js'
import { KEY_BYTES, VALUE_BYTES } from './jobs.js'

/**
 * Records shaped like ProducerPerformance's: values of random capital letters (so gzip and
 * snappy see the same entropy as in the Java runs), keys of 10 ASCII digits. The first four
 * bytes of each value carry the record's index, for the latency runs.
 */
export function makeRecords(n: number, seed = 1, valueBytes = VALUE_BYTES): Rec[] {
  let x = seed >>> 0 || 1
  const out: Rec[] = new Array(n)
  // Large values (the scale suite's 100 KiB and 1 MB) come from a pool of 16, so a run's
  // records need not all be in memory at once; keys stay distinct.
  const pool: Buffer[] = []
  const distinct = valueBytes > 4096 ? 16 : n
  for (let i = 0; i < n; i++) {
    if (i >= distinct) {
      x ^= x << 13
      x ^= x >>> 17
      x ^= x << 5
      out[i] = { key: Buffer.from(String(x >>> 0).padStart(KEY_BYTES, '0')), value: pool[i % distinct]! }
      continue
    }
    const value = Buffer.allocUnsafe(valueBytes)
    if (distinct < n) pool.push(value)
    for (let j = 4; j < valueBytes; j++) {
      // xorshift32: cheap and deterministic.
      x ^= x << 13
      x ^= x >>> 17
      x ^= x << 5
      value[j] = 65 + ((x >>> 0) % 26)
    }
    value.writeUInt32BE(i, 0)
    const key = Buffer.from(String(x >>> 0).padStart(KEY_BYTES, '0'))
    out[i] = { key, value }
  }
  return out
}
