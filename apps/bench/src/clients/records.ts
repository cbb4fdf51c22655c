import type { Rec } from './adapter.js'
import { KEY_BYTES, VALUE_BYTES } from './jobs.js'

/**
 * Records shaped like ProducerPerformance's: values of random capital letters (so gzip and
 * snappy see the same entropy as in the Java runs), keys of 10 ASCII digits. The first four
 * bytes of each value carry the record's index, for the latency runs.
 */
export function makeRecords(n: number, seed = 1): Rec[] {
  let x = seed >>> 0 || 1
  const out: Rec[] = new Array(n)
  for (let i = 0; i < n; i++) {
    const value = Buffer.allocUnsafe(VALUE_BYTES)
    for (let j = 4; j < VALUE_BYTES; j++) {
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
