/**
 * @tidelog/client's Admin against real Apache Kafka (single-node KRaft, started by
 * test/helpers/kafka.ts), on the newest release and the previous line.
 */
import { Kafka, logLevel } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Produce, ZERO_UUID, encodeRecordBatch } from '@tidelog/protocol'
import { Admin, AdminError, ConfigSource, ProtocolError } from '@tidelog/client'
import { KAFKA_VERSIONS, peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { kafkaUse, kafkajsVersion, recordPeer, recordsPeers } from '../helpers/peers.js'

/** Retries an assertion while KRaft metadata propagates to the broker. */
async function eventually<T>(fn: () => Promise<T>, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs
  for (;;) {
    try {
      return await fn()
    } catch (e) {
      if (Date.now() > end) throw e
      await new Promise((r) => setTimeout(r, 200))
    }
  }
}

/** Appends records to one partition with a plain Produce (acks=all) through the Admin's cluster. */
async function produce(admin: Admin, topic: string, partition: number, records: { value: string; timestamp: number }[]): Promise<bigint> {
  const meta = await admin.cluster.refreshMetadata([topic])
  const leader = meta.partition(topic, partition)!.leader
  const res = await admin.cluster.send(leader, Produce, {
    transactionalId: null,
    acks: -1,
    timeoutMs: 10_000,
    topicData: [{ name: topic, partitionData: [{ index: partition, records: encodeRecordBatch({ records }) }] }],
  })
  const p = res.responses[0]!.partitionResponses[0]!
  if (p.errorCode !== 0) throw new ProtocolError(p.errorCode, { api: 'Produce', topic, partition })
  return p.baseOffset
}

for (const version of [KAFKA_VERSIONS.latest, KAFKA_VERSIONS.previous]) {
  describe(`Admin against Apache Kafka ${version}`, () => {
    let kafka: KafkaNode | undefined
    recordsPeers(() => kafkaUse(kafka))
    let admin: Admin
    let skip: string | undefined
    const topic = `admin-${version.replace(/\./g, '-')}-${Date.now()}`

    beforeAll(async () => {
      try {
        kafka = await startKafka({ version })
      } catch (e) {
        skip = peerUnavailable(`Apache Kafka ${version}`, e)
        return
      }
      admin = new Admin({ brokers: [kafka.bootstrap], clientId: 'tidelog-interop', timeoutMs: 30_000 })
      await admin.connect()
    })

    afterAll(async () => {
      await admin?.close()
      await kafka?.stop()
    })

    it('describeCluster', async (ctx) => {
      if (skip) return ctx.skip()
      const d = await admin.describeCluster()
      expect(d.clusterId).toMatch(/^[A-Za-z0-9_-]{22}$/)
      expect(d.brokers).toEqual([{ nodeId: 1, host: '127.0.0.1', port: kafka!.port, rack: null }])
      expect(d.controllerId).toBe(1)
      // The connection negotiated against the broker's real ranges.
      const conn = await admin.cluster.anyConnection()
      expect(conn.versions.brokerRange(18)!.maxVersion).toBeGreaterThanOrEqual(3)
    })

    it('createTopics, listTopics, describeTopics, createPartitions', async (ctx) => {
      if (skip) return ctx.skip()
      const created = await admin.createTopics([{ name: topic, partitions: 3, replicationFactor: 1, configs: { 'retention.ms': '3600000' } }])
      expect(created).toHaveLength(1)
      expect(created[0]).toMatchObject({ name: topic, partitions: 3, replicationFactor: 1 })
      expect(created[0]!.topicId).not.toBe(ZERO_UUID)
      // Broker defaults (CreateTopics v4+) and validateOnly.
      const dry = await admin.createTopics([{ name: `${topic}-dry` }], { validateOnly: true })
      expect(dry[0]).toMatchObject({ name: `${topic}-dry`, partitions: 1, replicationFactor: 1 })

      const again = await admin.createTopics([{ name: topic, partitions: 3, replicationFactor: 1 }]).catch((e) => e)
      expect(again).toBeInstanceOf(AdminError)
      expect(again.errors[0]).toBeInstanceOf(ProtocolError)
      expect(again.errors[0]).toMatchObject({ type: 'TOPIC_ALREADY_EXISTS', topic })
      const bad = await admin.createTopics([{ name: `${topic}-bad`, partitions: 1, replicationFactor: 3 }]).catch((e) => e)
      expect(bad.errors[0]).toMatchObject({ type: 'INVALID_REPLICATION_FACTOR', topic: `${topic}-bad` })

      const names = await eventually(async () => {
        const list = await admin.listTopics()
        expect(list).toContain(topic)
        return list
      })
      expect(names).not.toContain(`${topic}-dry`)
      expect(names.some((n) => n.startsWith('__'))).toBe(false)

      const [desc] = await eventually(() => admin.describeTopics([topic]))
      expect(desc!.topicId).toBe(created[0]!.topicId)
      expect(desc!.isInternal).toBe(false)
      expect(desc!.partitions.map((p) => [p.partition, p.leader, p.replicas, p.isr])).toEqual([
        [0, 1, [1], [1]],
        [1, 1, [1], [1]],
        [2, 1, [1], [1]],
      ])
      expect(desc!.partitions[0]!.leaderEpoch).toBeGreaterThanOrEqual(0)

      const missing = await admin.describeTopics([topic, `${topic}-missing`]).catch((e) => e)
      expect(missing).toBeInstanceOf(AdminError)
      expect(missing.errors[0]).toMatchObject({ type: 'UNKNOWN_TOPIC_OR_PARTITION', topic: `${topic}-missing` })
      expect(missing.results.map((r: { name: string }) => r.name)).toEqual([topic])

      await admin.createPartitions([{ topic, count: 5 }])
      await eventually(async () => {
        const [d] = await admin.describeTopics([topic])
        expect(d!.partitions).toHaveLength(5)
      })
      const shrink = await admin.createPartitions([{ topic, count: 2 }]).catch((e) => e)
      expect(shrink.errors[0]).toMatchObject({ type: 'INVALID_PARTITIONS', topic })
    })

    it('describeConfigs and alterConfigs', async (ctx) => {
      if (skip) return ctx.skip()
      const [t] = await admin.describeConfigs([{ type: 'topic', name: topic }], { includeSynonyms: true, includeDocumentation: true })
      const retention = t!.configs.find((c) => c.name === 'retention.ms')!
      expect(retention).toMatchObject({ value: '3600000', source: ConfigSource.DYNAMIC_TOPIC_CONFIG, isDefault: false, readOnly: false })
      expect(retention.synonyms[0]).toMatchObject({ name: 'retention.ms', value: '3600000', source: ConfigSource.DYNAMIC_TOPIC_CONFIG })
      expect(retention.type).toBe(5) // LONG
      expect(retention.documentation).toMatch(/\w+/)
      const cleanup = t!.configs.find((c) => c.name === 'cleanup.policy')!
      expect(cleanup).toMatchObject({ value: 'delete', isDefault: true, source: ConfigSource.DEFAULT_CONFIG })

      const [b] = await admin.describeConfigs([{ type: 'broker', name: '1', keys: ['num.partitions', 'log.dirs'] }])
      expect(b!.configs.map((c) => c.name).sort()).toEqual(['log.dirs', 'num.partitions'])
      expect(b!.configs.find((c) => c.name === 'num.partitions')!.value).toBe('1')

      await admin.alterConfigs([
        { type: 'topic', name: topic, configs: [{ name: 'retention.ms', value: '7200000' }, { name: 'segment.bytes', value: '10485760' }] },
      ])
      await admin.alterConfigs([{ type: 'topic', name: topic, configs: [{ name: 'segment.bytes', op: 'delete' }] }])
      await eventually(async () => {
        const [after] = await admin.describeConfigs([{ type: 'topic', name: topic, keys: ['retention.ms', 'segment.bytes'] }])
        const byName = new Map(after!.configs.map((c) => [c.name, c]))
        expect(byName.get('retention.ms')!.value).toBe('7200000')
        expect(byName.get('segment.bytes')!.source).not.toBe(ConfigSource.DYNAMIC_TOPIC_CONFIG)
      })
      const invalid = await admin.alterConfigs([{ type: 'topic', name: topic, configs: [{ name: 'retention.ms', value: 'soon' }] }]).catch((e) => e)
      expect(invalid).toBeInstanceOf(AdminError)
      expect(invalid.errors[0]).toMatchObject({ type: 'INVALID_CONFIG' })
    })

    it('listOffsets and deleteRecords', async (ctx) => {
      if (skip) return ctx.skip()
      const empty = await admin.listOffsets(topic, 'latest')
      expect(empty.map((o) => o.offset)).toEqual([0n, 0n, 0n, 0n, 0n])
      const base = 1_700_000_000_000
      const records = Array.from({ length: 10 }, (_, i) => ({ value: `v${i}`, timestamp: base + i * 1000 + (i === 6 ? 100_000 : 0) }))
      expect(await produce(admin, topic, 0, records)).toBe(0n)

      const latest = await admin.listOffsets(topic)
      expect(latest.find((o) => o.partition === 0)!.offset).toBe(10n)
      const [earliest, byTime, max] = await admin.listOffsets([
        { topic, partition: 0, timestamp: 'earliest' },
        { topic, partition: 1, timestamp: 'latest' },
        { topic, partition: 2, timestamp: 'latest' },
      ]).then(async (r) => [
        r[0]!,
        (await admin.listOffsets([{ topic, partition: 0, timestamp: base + 2500 }]))[0]!,
        (await admin.listOffsets([{ topic, partition: 0, timestamp: 'max-timestamp' }]))[0]!,
      ])
      expect(earliest.offset).toBe(0n)
      expect(byTime).toMatchObject({ offset: 3n, timestamp: BigInt(base + 3000) })
      expect(max).toMatchObject({ offset: 6n, timestamp: BigInt(base + 106_000) })

      const deleted = await admin.deleteRecords([{ topic, partition: 0, offset: 4n }])
      expect(deleted).toEqual([{ topic, partition: 0, lowWatermark: 4n }])
      const [after] = await admin.listOffsets([{ topic, partition: 0, timestamp: 'earliest' }])
      expect(after!.offset).toBe(4n)
      const beyond = await admin.deleteRecords([{ topic, partition: 0, offset: 99n }]).catch((e) => e)
      expect(beyond.errors[0]).toMatchObject({ type: 'OFFSET_OUT_OF_RANGE', topic, partition: 0 })
    })

    it('group offsets: alterOffsets, fetchOffsets, listGroups, describeGroups, resetOffsets, deleteGroups', async (ctx) => {
      if (skip) return ctx.skip()
      const group = `${topic}-group`
      await admin.alterOffsets(group, [
        { topic, partition: 0, offset: 5n, metadata: 'hello' },
        { topic, partition: 1, offset: 0n },
      ])
      const all = await admin.fetchOffsets(group)
      expect(all.map((o) => [o.partition, o.offset, o.metadata])).toEqual([
        [0, 5n, 'hello'],
        [1, 0n, ''],
      ])
      const perTopic = await admin.fetchOffsets(group, [topic])
      expect(perTopic.map((o) => o.offset)).toEqual([5n, 0n, -1n, -1n, -1n])

      const groups = await eventually(async () => {
        const list = await admin.listGroups()
        expect(list.map((g) => g.groupId)).toContain(group)
        return list
      })
      const listed = groups.find((g) => g.groupId === group)!
      expect(listed.protocolType).toBe('')
      expect(listed.state.toLowerCase()).toBe('empty')
      expect((await admin.listGroups({ states: ['Stable'] })).map((g) => g.groupId)).not.toContain(group)

      const [d] = await admin.describeGroups([group])
      expect(d).toMatchObject({ groupId: group, state: 'Empty', members: [] })

      const reset = await admin.resetOffsets(group, topic, 'earliest')
      expect(reset.find((o) => o.partition === 0)!.offset).toBe(4n)
      expect((await admin.fetchOffsets(group, [topic])).map((o) => o.offset)).toEqual([4n, 0n, 0n, 0n, 0n])
      await admin.resetOffsets(group, topic, 'latest')
      expect((await admin.fetchOffsets(group, [topic]))[0]!.offset).toBe(10n)

      await admin.deleteGroups([group])
      const gone = await admin.deleteGroups([group]).catch((e) => e)
      expect(gone).toBeInstanceOf(AdminError)
      expect(gone.errors[0]).toMatchObject({ type: 'GROUP_ID_NOT_FOUND', groupId: group })
    })

    it('describeGroups decodes the members of a live consumer group (kafkajs as the member)', async (ctx) => {
      if (skip) return ctx.skip()
      const group = `${topic}-live`
      recordPeer('kafkajs', kafkajsVersion())
      const kafkajs = new Kafka({ brokers: [kafka!.bootstrap], clientId: 'kafkajs-member', logLevel: logLevel.NOTHING })
      const consumer = kafkajs.consumer({ groupId: group, sessionTimeout: 10_000, heartbeatInterval: 500 })
      try {
        await consumer.connect()
        await consumer.subscribe({ topics: [topic], fromBeginning: true })
        const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()))
        await consumer.run({ eachMessage: async () => {} })
        await joined
        const [d] = await eventually(async () => {
          const r = await admin.describeGroups([group])
          expect(r[0]!.state).toBe('Stable')
          return r
        })
        expect(d!.protocolType).toBe('consumer')
        expect(d!.members).toHaveLength(1)
        const m = d!.members[0]!
        expect(m.clientId).toBe('kafkajs-member')
        expect(m.subscription!.topics).toEqual([topic])
        const assigned = m.memberAssignment!.assignedPartitions
        expect(assigned.map((a) => a.topic)).toEqual([topic])
        expect([...assigned[0]!.partitions].sort()).toEqual([0, 1, 2, 3, 4])
        // Offsets of a group with active members cannot be altered by an admin.
        const busy = await admin.alterOffsets(group, [{ topic, partition: 0, offset: 1n }]).catch((e) => e)
        expect(busy).toBeInstanceOf(AdminError)
        expect(busy.errors[0]).toMatchObject({ type: 'UNKNOWN_MEMBER_ID', groupId: group, topic, partition: 0 })
        const stillThere = await admin.deleteGroups([group]).catch((e) => e)
        expect(stillThere.errors[0]).toMatchObject({ type: 'NON_EMPTY_GROUP', groupId: group })
      } finally {
        await consumer.disconnect()
      }
    })

    it('deleteTopics', async (ctx) => {
      if (skip) return ctx.skip()
      await admin.deleteTopics([topic])
      await eventually(async () => expect(await admin.listTopics()).not.toContain(topic))
      const err = await admin.deleteTopics([topic]).catch((e) => e)
      expect(err).toBeInstanceOf(AdminError)
      expect(err.errors[0]).toMatchObject({ type: 'UNKNOWN_TOPIC_OR_PARTITION', topic })
    })
  })
}
