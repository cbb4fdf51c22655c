import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Admin } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import type { Producer } from '@tidelog/producer'
import { describe, expect, it } from 'vitest'
import { Consumed, EmitStrategy, KafkaStreams, Materialized, Produced, Serdes, SessionWindows, StreamsBuilder, TimeWindows, type StreamsConfig } from '@tidelog/streams'
import { readTopic, useBroker } from './helpers/broker.js'

let brokers: string[]
let admin: Admin
let producer: Producer
useBroker('tidelog-streams-emit-restart-', (b) => ({ brokers, admin, producer } = b))

const S = Serdes.String()
const DAY = 86_400_000
/** A minute boundary an hour back: times near 1970 would be deleted by the topics' time retention (7 days) while the test runs. */
const T0 = Math.floor((Date.now() - 3_600_000) / 60_000) * 60_000

/** Final counts per 10 s window and per session (gap 5 s), kept a day in their stores so a restart still finds the emitted ones; times printed from T0. */
function finals(prefix: string) {
  const b = new StreamsBuilder()
  const g = b.stream(`${prefix}-in`, Consumed.with(S, S)).groupByKey()
  g.windowedBy(TimeWindows.ofSizeWithNoGrace(10_000)).emitStrategy(EmitStrategy.onWindowClose())
    .count(Materialized.as<string, number>('tumbling').withRetention(DAY))
    .toStream().map((w, n) => ({ key: `t:${w.key}@${w.window.start - T0}`, value: String(n) })).to(`${prefix}-out`, Produced.with(S, S))
  g.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(5_000)).emitStrategy(EmitStrategy.onWindowClose())
    .count(Materialized.as<string, number>('sessions').withRetention(DAY))
    .toStream().map((w, n) => ({ key: `s:${w.key}@${w.window.start - T0}-${w.window.end - T0}`, value: String(n) })).to(`${prefix}-out`, Produced.with(S, S))
  return b.build()
}

const send = (topic: string, records: [string, number][]) => producer.send(records.map(([key, t]) => ({ topic, key, value: 'x', timestamp: T0 + t })))
const lines = (rs: { key: Buffer | null; value: Buffer | null }[]) => rs.map((r) => `${r.key?.toString()}=${r.value?.toString()}`)

/** The offset metadata the application committed for partition 0 of `topic`, decoded as Java's TopicPartitionMetadata v2. */
async function committedMetadata(groupId: string, topic: string): Promise<{ magic: number; entries: { [k: string]: number } }> {
  const c = new Consumer({ brokers, groupId })
  try {
    const [o] = await c.committed([{ topic, partition: 0 }])
    const b = Buffer.from(o!.metadata ?? '', 'base64')
    const entries: { [k: string]: number } = {}
    let at = 13
    for (let i = 0; i < b.readInt32BE(9); i++) {
      const len = b.readInt32BE(at)
      entries[b.subarray(at + 4, at + 4 + len).toString()] = Number(b.readBigInt64BE(at + 4 + len))
      at += 12 + len
    }
    return { magic: b.readInt8(0), entries }
  } finally {
    await c.close()
  }
}

describe('emit on window close across restarts (KIP-825)', () => {
  for (const guarantee of ['at_least_once', 'exactly_once_v2'] as const) {
    it(`${guarantee}: the last emitted close time is committed with the offsets, so a restarted application emits each window once`, async () => {
      const prefix = guarantee === 'at_least_once' ? 'er1' : 'er2'
      const stateDir = mkdtempSync(join(tmpdir(), 'tidelog-emit-restart-'))
      try {
        await admin.createTopics([`${prefix}-in`, `${prefix}-out`].map((name) => ({ name, partitions: 1 })))
        // Java's internal emit interval (default 1 s of wall-clock time between looks for closed windows): 0, so every record looks.
        const config = {
          'application.id': `${prefix}-app`, 'bootstrap.servers': brokers, 'state.dir': stateDir, 'commit.interval.ms': 100,
          'processing.guarantee': guarantee, '__emit.interval.ms.kstreams.windowed.aggregation__': 0,
        } as StreamsConfig
        const first = new KafkaStreams(finals(prefix), config)
        await first.start()
        await send(`${prefix}-in`, [['a', 1_000], ['a', 2_000], ['b', 3_000], ['a', 12_000]])
        // Stream time 12000 closes window [0, 10000) and the sessions that ended before 7000.
        const before = lines(await readTopic(brokers, `${prefix}-out`, 4))
        expect(before).toEqual(['t:a@0=2', 't:b@0=1', 's:a@1000-2000=2', 's:b@3000-3000=1'])
        await first.close()
        expect(await committedMetadata(`${prefix}-app`, `${prefix}-in`)).toEqual({ magic: 2, entries: { tumbling: T0 + 12_000, sessions: T0 + 7_000 } })

        const second = new KafkaStreams(finals(prefix), config)
        await second.start()
        await send(`${prefix}-in`, [['a', 30_000]])
        // Only what closed since: window [10000, 20000) and the session at 12000. The windows emitted
        // before the restart are still in the stores and would come first if they were emitted again.
        const after = lines(await readTopic(brokers, `${prefix}-out`, 6))
        await second.close()
        expect(after).toEqual([...before, 't:a@10000=1', 's:a@12000-12000=1'])
      } finally {
        rmSync(stateDir, { recursive: true, force: true })
      }
    }, 120_000)
  }
})
