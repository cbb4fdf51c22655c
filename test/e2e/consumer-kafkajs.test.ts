import { Consumer, roundRobinAssignor } from '@tidelog/consumer'
import { Kafka, logLevel } from 'kafkajs'
import { describe, expect, it } from 'vitest'
import { cleanup, startTestBroker } from '../../packages/consumer/test/helpers/broker.js'
import { waitFor } from '../../packages/consumer/test/helpers/produce.js'

describe('a group mixing tidelog and kafkajs 2.2.4 consumers', () => {
  it.each([
    ['a tidelog member leads', false],
    ['the kafkajs member leads', true],
  ])('shares 6 partitions under kafkajs\' round-robin protocol name, every record once (%s)', async (_, kafkajsFirst) => {
    const { brokers, producer } = await startTestBroker()
    const topic = 'mixed'
    await producer.fill(topic, 6, 30_000, { perBatch: 500 })
    const seen = new Map<string, number>()
    const owners = new Map<string, number[]>()
    const count = (v: string) => seen.set(v, (seen.get(v) ?? 0) + 1)

    // kafkajs names its round-robin assignor "RoundRobinAssigner" and writes version-0 metadata
    // labelled 1; the same algorithm under that name lets tidelog members share the group.
    const kafkajsNamed = { ...roundRobinAssignor, name: 'RoundRobinAssigner' }
    const startTidelog = async () => {
      for (const name of ['t1', 't2']) {
        const c = new Consumer({ brokers, groupId: 'mixed-group', clientId: name, autoOffsetReset: 'earliest', assignors: [kafkajsNamed], heartbeatIntervalMs: 300 })
        await c.subscribe([topic], { listener: { onPartitionsAssigned: () => void owners.set(name, c.assigned().map((tp) => tp.partition)) } })
        const run = (async () => {
          for await (const m of c) count(m.value!.toString())
        })()
        cleanup(async () => {
          await c.close()
          await run
        })
      }
    }
    const startKafkajs = async () => {
      const kafka = new Kafka({ clientId: 'kjs', brokers, logLevel: logLevel.NOTHING })
      const k = kafka.consumer({ groupId: 'mixed-group', heartbeatInterval: 300, sessionTimeout: 10_000, maxWaitTimeInMs: 200 })
      k.on(k.events.GROUP_JOIN, (e) => owners.set('kafkajs', (e.payload.memberAssignment[topic] ?? []) as number[]))
      await k.connect()
      await k.subscribe({ topic, fromBeginning: true })
      await k.run({ eachMessage: async ({ message }) => void count(message.value!.toString()) })
      cleanup(() => k.disconnect())
    }
    if (kafkajsFirst) {
      await startKafkajs()
      await waitFor(() => owners.has('kafkajs'), 30_000, 'kafkajs to form the group')
      await startTidelog()
    } else {
      await startTidelog()
      await startKafkajs()
    }
    await waitFor(() => owners.size === 3 && [...owners.values()].every((l) => l.length === 2), 30_000, 'three members with two partitions each')
    await producer.fill(topic, 6, 30_000, { from: 30_000, perBatch: 500 })
    await waitFor(() => seen.size === 60_000, 30_000, 'all 60,000 records')
    expect([...owners.values()].flat().sort()).toEqual([0, 1, 2, 3, 4, 5])
    // Members giving up partitions in a rebalance committed what they had processed first.
    await new Promise((r) => setTimeout(r, 500))
    expect([...seen.values()].filter((n) => n > 1)).toEqual([])
  }, 60_000)
})
