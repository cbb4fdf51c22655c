import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Admin } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import type { Producer } from '@tidelog/producer'
import { describe, expect, it } from 'vitest'
import { Grouped, KafkaStreams, Materialized, Produced, readCheckpoint, Serdes, StreamsBuilder, writeCheckpoint, type DslStoreType, type StreamsConfig } from '@tidelog/streams'
import { useBroker } from './helpers/broker.js'
import { waitForState } from './helpers/wordcount.js'

let brokers: string[]
let admin: Admin
let producer: Producer
useBroker('tidelog-streams-pstore-', (b) => ({ brokers, admin, producer } = b))

const S = Serdes.String()

/** Armed, a line 'boom' fails its thread once (the next owner of the task reads it again and passes it). */
let boomArmed = true

/** Word count through a repartition topic into `counts` (task 1_0 holds the store). */
function wordCount(prefix: string, type: DslStoreType) {
  const b = new StreamsBuilder()
  b.stream<string, string>(`${prefix}-lines`)
    .flatMapValues((v) => {
      if (v === 'boom' && boomArmed) {
        boomArmed = false
        throw new Error('boom on purpose')
      }
      return v === 'boom' ? [] : v.split(' ')
    })
    .groupBy((_k, w) => w, Grouped.with(S, S))
    .count(Materialized.as<string, number>('counts').withStoreType(type))
    .toStream()
    .to(`${prefix}-counts`, Produced.with(S, Serdes.Long()))
  return b.build()
}

/** Reads the counts topic from the start until every word's latest count is `want`'s (or a minute passes). */
async function counts(topic: string, want: { [w: string]: number }): Promise<{ [w: string]: number }> {
  const c = new Consumer({ brokers, autoOffsetReset: 'earliest', isolationLevel: 'read_committed' })
  const out: { [w: string]: number } = {}
  const ac = new AbortController()
  const timer = setTimeout(() => ac.abort(), 60_000)
  const same = () => JSON.stringify(Object.entries(out).sort()) === JSON.stringify(Object.entries(want).sort())
  try {
    c.assign([{ topic, partition: 0 }])
    for await (const b of c.batches({ signal: ac.signal })) {
      for (const m of b.messages) out[m.key!.toString()] = Number(m.value!.readBigInt64BE())
      if (same()) break
    }
  } catch (e) {
    if (!ac.signal.aborted) throw e
  } finally {
    clearTimeout(timer)
    await c.close()
  }
  return out
}

const send = (topic: string, lines: string[]) => producer.send(lines.map((value) => ({ topic, key: null, value })))

describe('persistent stores on the broker', () => {
  it('at_least_once: a clean restart of a persistent store restores nothing (the checkpoint covers it); an in-memory one restores the whole changelog; a checkpoint past the end restores from the start', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'tidelog-pstore-alos-'))
    try {
      await admin.createTopics([{ name: 'p1-lines', partitions: 1 }, { name: 'p1-counts', partitions: 1 }])
      const config: StreamsConfig = { 'application.id': 'p1-app', 'bootstrap.servers': brokers, 'state.dir': stateDir, 'commit.interval.ms': 100, 'default.key.serde': S, 'default.value.serde': S }
      const first = new KafkaStreams(wordCount('p1', 'persistent'), config)
      await first.start()
      await send('p1-lines', ['a b a', 'c a b'])
      expect(await counts('p1-counts', { a: 3, b: 2, c: 1 })).toEqual({ a: 3, b: 2, c: 1 })
      await first.close()
      expect(existsSync(join(stateDir, 'p1-app', '1_0', 'counts', 'data.mdb'))).toBe(true)
      expect(readCheckpoint(join(stateDir, 'p1-app', '1_0', '.checkpoint'))).toEqual([{ topic: 'p1-app-counts-changelog', partition: 0, offset: 5n }])

      const second = new KafkaStreams(wordCount('p1', 'persistent'), config)
      await second.start()
      await send('p1-lines', ['a d'])
      expect(await counts('p1-counts', { a: 4, b: 2, c: 1, d: 1 })).toEqual({ a: 4, b: 2, c: 1, d: 1 })
      expect(second.restoredRecords).toBe(0)
      await second.close()

      // The same application on an in-memory store: never checkpointed, so all 8 changelog records come back.
      const third = new KafkaStreams(wordCount('p1', 'in-memory'), config)
      await third.start()
      await send('p1-lines', ['d'])
      expect(await counts('p1-counts', { a: 4, b: 2, c: 1, d: 2 })).toEqual({ a: 4, b: 2, c: 1, d: 2 })
      expect(third.restoredRecords).toBe(8)
      await third.close()

      // The persistent store on disk still holds run two's counts (d = 1). A checkpoint past the changelog's
      // end (9 records) must not keep it: the store is emptied and restored from the start, as Java does.
      writeCheckpoint(join(stateDir, 'p1-app', '1_0', '.checkpoint'), [{ topic: 'p1-app-counts-changelog', partition: 0, offset: 1000n }])
      const fourth = new KafkaStreams(wordCount('p1', 'persistent'), config)
      await fourth.start()
      await send('p1-lines', ['d'])
      expect(await counts('p1-counts', { a: 4, b: 2, c: 1, d: 3 })).toEqual({ a: 4, b: 2, c: 1, d: 3 })
      expect(fourth.restoredRecords).toBe(9)
      await fourth.close()
      expect(readCheckpoint(join(stateDir, 'p1-app', '1_0', '.checkpoint'))).toEqual([{ topic: 'p1-app-counts-changelog', partition: 0, offset: 9n }])
    } finally {
      rmSync(stateDir, { recursive: true, force: true })
    }
  })

  it('exactly_once_v2: a clean restart restores nothing; after a failed thread the store is wiped and restored from the committed changelog', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'tidelog-pstore-eos-'))
    try {
      await admin.createTopics([{ name: 'p2-lines', partitions: 1 }, { name: 'p2-counts', partitions: 1 }])
      const config: StreamsConfig = { 'application.id': 'p2-app', 'bootstrap.servers': brokers, 'state.dir': stateDir, 'processing.guarantee': 'exactly_once_v2', 'default.key.serde': S, 'default.value.serde': S }
      const first = new KafkaStreams(wordCount('p2', 'persistent'), config)
      await first.start()
      await send('p2-lines', ['a b a'])
      expect(await counts('p2-counts', { a: 2, b: 1 })).toEqual({ a: 2, b: 1 })
      await first.close()

      const second = new KafkaStreams(wordCount('p2', 'persistent'), config)
      second.setUncaughtExceptionHandler(() => 'SHUTDOWN_CLIENT')
      await second.start()
      await send('p2-lines', ['b c'])
      expect(await counts('p2-counts', { a: 2, b: 2, c: 1 })).toEqual({ a: 2, b: 2, c: 1 })
      expect(second.restoredRecords).toBe(0)
      await send('p2-lines', ['boom'])
      await waitForState(second, 'ERROR')
      await second.close()

      const third = new KafkaStreams(wordCount('p2', 'persistent'), config)
      await third.start()
      await send('p2-lines', ['a'])
      expect(await counts('p2-counts', { a: 3, b: 2, c: 1 })).toEqual({ a: 3, b: 2, c: 1 })
      // Five committed changelog records (a, b, a, then b, c), read back into the wiped store.
      expect(third.restoredRecords).toBe(5)
      await third.close()
    } finally {
      rmSync(stateDir, { recursive: true, force: true })
    }
  })
})
