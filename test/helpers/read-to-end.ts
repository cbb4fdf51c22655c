import { Consumer, type Message } from '@tidelog/consumer'

export interface ReadRecord {
  offset: bigint
  value: string
}

/**
 * Every record of a topic's partitions from the log start up to the end offsets taken when the
 * read starts (under read_committed, the last stable offset), read with our consumer: the whole
 * content, so a test can assert there is nothing beyond what it expects without waiting out an
 * idle timeout as a console consumer's --timeout-ms does. Done when each partition's position
 * has reached its end offset (the position moves over control records and aborted data too).
 * The log must be at rest: records written after the read starts are not waited for.
 */
export async function readToEnd(
  brokers: string[],
  topic: string,
  partitions: number,
  options: { isolationLevel?: 'read_committed' | 'read_uncommitted'; timeoutMs?: number } = {},
): Promise<ReadRecord[][]> {
  const c = new Consumer({ brokers, isolationLevel: options.isolationLevel ?? 'read_committed' })
  const tps = Array.from({ length: partitions }, (_, partition) => ({ topic, partition }))
  const out = tps.map(() => [] as ReadRecord[])
  const done = new AbortController()
  let ends: { topic: string; partition: number; offset: bigint }[] | undefined
  const reached = (): boolean => ends !== undefined && ends.every((e) => (c.position(e) ?? -1n) >= e.offset)
  const poll = setInterval(() => {
    if (reached()) done.abort()
  }, 20)
  const timeoutMs = options.timeoutMs ?? 120_000
  const timer = setTimeout(() => done.abort(new Error('timeout')), timeoutMs)
  try {
    c.assign(tps)
    await c.seekToBeginning()
    ends = await c.endOffsets(tps)
    if (!reached()) {
      try {
        for await (const m of c.messages({ signal: done.signal }) as AsyncIterable<Message>) {
          out[m.partition]!.push({ offset: m.offset, value: m.value?.toString() ?? '' })
          if (reached()) break
        }
      } catch (e) {
        if (!done.signal.aborted) throw e
      }
    }
    if (!reached()) {
      const where = (ends ?? []).map((e) => `${e.partition}: position ${String(c.position(e))} of end ${e.offset}`).join(', ')
      throw new Error(`readToEnd(${topic}) did not reach the end offsets in ${timeoutMs} ms (${where})`)
    }
    return out
  } finally {
    clearInterval(poll)
    clearTimeout(timer)
    await c.close()
  }
}
