/** Reading the cache tests' outputs from the broker (cache.test.ts, cache-broker.test.ts). */
import { Consumer } from '@tidelog/consumer'

/** Reads `topic` until each key's latest value (a Long, or null for a tombstone) is `want`. */
export async function readAll(brokers: string[], topic: string, want: { [k: string]: number | null }): Promise<{ n: number; latest: { [k: string]: number | null } }> {
  const c = new Consumer({ brokers, autoOffsetReset: 'earliest' })
  const latest: { [k: string]: number | null } = {}
  let n = 0
  const ac = new AbortController()
  const timer = setTimeout(() => ac.abort(), 60_000)
  try {
    c.assign([{ topic, partition: 0 }])
    for await (const batch of c.batches({ signal: ac.signal })) {
      for (const m of batch.messages) {
        latest[m.key!.toString()] = m.value === null ? null : Number(m.value.readBigInt64BE())
        n++
      }
      if (JSON.stringify(Object.entries(latest).sort()) === JSON.stringify(Object.entries(want).sort())) break
    }
  } catch (e) {
    if (!ac.signal.aborted) throw e
  } finally {
    clearTimeout(timer)
    await c.close()
  }
  return { n, latest }
}
