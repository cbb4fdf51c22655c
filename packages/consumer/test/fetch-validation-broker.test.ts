/**
 * KIP-320 against the real broker (`startBroker`): a position restored from a committed offset
 * carries its leader epoch, is validated with OffsetForLeaderEpoch (v3+) before fetching, and
 * consumption goes on from it with nothing redelivered.
 */
import diagnostics from 'node:diagnostics_channel'
import { Consumer, type Message } from '@tidelog/consumer'
import { OffsetForLeaderEpoch } from '@tidelog/protocol'
import type { RequestEvent } from '@tidelog/client'
import { expect, it } from 'vitest'
import { cleanup, startTestBroker } from './helpers/broker.js'

it('validates a committed position with OffsetForLeaderEpoch and resumes after it', async () => {
  const { brokers, producer } = await startTestBroker(1)
  await producer.send('validated', 0, [{ value: 'a' }, { value: 'b' }, { value: 'c' }])
  const first = new Consumer({ brokers, groupId: 'kip320', autoOffsetReset: 'earliest', fetchMaxWaitMs: 50 })
  cleanup(() => first.close())
  first.assign([{ topic: 'validated', partition: 0 }])
  const it1 = first[Symbol.asyncIterator]()
  const m = (await it1.next()).value as Message
  expect(m.value!.toString()).toBe('a')
  await first.commit()
  const [committed] = await first.committed([{ topic: 'validated', partition: 0 }])
  expect(committed).toMatchObject({ offset: 1n, leaderEpoch: m.leaderEpoch })
  expect(m.leaderEpoch).toBeGreaterThanOrEqual(0)
  await first.close()

  const sent: RequestEvent[] = []
  const onStart = (e: unknown): void => void sent.push(e as RequestEvent)
  diagnostics.subscribe('tidelog:request:start', onStart)
  cleanup(async () => {
    diagnostics.unsubscribe('tidelog:request:start', onStart)
  })
  const second = new Consumer({ brokers, groupId: 'kip320', autoOffsetReset: 'earliest', fetchMaxWaitMs: 50 })
  cleanup(() => second.close())
  second.assign([{ topic: 'validated', partition: 0 }])
  const it2 = second[Symbol.asyncIterator]()
  const values: string[] = []
  for (let i = 0; i < 2; i++) values.push(((await it2.next()).value as Message).value!.toString())
  expect(values).toEqual(['b', 'c'])
  const epochs = sent.filter((e) => e.apiKey === OffsetForLeaderEpoch.apiKey)
  expect(epochs).toHaveLength(1)
  expect(epochs[0]!.apiVersion).toBeGreaterThanOrEqual(3)
})
