import { retrying, type KafkaModule } from './types.js'

/** "Admin Client": topics, partitions, offsets, configs, groups, records, cluster, errors. */
export async function adminProgram(lib: KafkaModule, brokers: string[], prefix: string) {
  const { Kafka, logLevel, ConfigResourceTypes } = lib
  const kafka = new Kafka({ clientId: 'my-app', brokers, logLevel: logLevel.NOTHING })
  const admin = kafka.admin()
  const events: string[] = []
  admin.on(admin.events.CONNECT, () => events.push('connect'))
  admin.on(admin.events.DISCONNECT, () => events.push('disconnect'))
  let badEvent = ''
  try {
    admin.on('admin.nope' as never, () => {})
  } catch (e) {
    badEvent = (e as Error).name
  }
  await admin.connect()
  const topic = `${prefix}-admin-topic`
  const created = await admin.createTopics({ topics: [{ topic, numPartitions: 2, configEntries: [{ name: 'cleanup.policy', value: 'delete' }] }] }).catch(async (e: { retriable?: boolean }) => {
    // Created, but the new topic's leaders were not visible yet (kafkajs on a fresh cluster).
    if (e.retriable !== true) throw e
    await retrying(() => admin.fetchTopicMetadata({ topics: [topic] }))
    return true
  })
  const again = await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] })
  const listed = (await admin.listTopics()).includes(topic)
  await admin.createPartitions({ topicPartitions: [{ topic, count: 3 }] })
  const metadata = await admin.fetchTopicMetadata({ topics: [topic] })

  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic, messages: Array.from({ length: 30 }, (_, i) => ({ value: `v${i}`, partition: i % 3, timestamp: String(1_600_000_000_000 + i * 1000) })) })
  await producer.disconnect()
  const offsets = await admin.fetchTopicOffsets(topic)
  const byTime = await admin.fetchTopicOffsetsByTimestamp(topic, 1_600_000_000_000 + 15_000)
  const future = await admin.fetchTopicOffsetsByTimestamp(topic, 2_000_000_000_000)

  const groupId = `${prefix}-admin-group`
  await retrying(() => admin.setOffsets({ groupId, topic, partitions: [{ partition: 0, offset: '4' }, { partition: 1, offset: '7' }] }))
  const afterSet = await retrying(() => admin.fetchOffsets({ groupId, topics: [topic] }))
  await admin.resetOffsets({ groupId, topic, earliest: true })
  const groups = (await admin.listGroups()).groups.filter((g) => g.groupId === groupId)
  const described = await admin.describeGroups([groupId])
  await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '5' }] })
  const afterDelete = await admin.fetchTopicOffsets(topic)

  const configs = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms', 'cleanup.policy'] }] })
  const cluster = await admin.describeCluster()

  const deletedGroups = await admin.deleteGroups([groupId])
  let missingGroup = ''
  try {
    await admin.deleteGroups([`${prefix}-never-existed`])
  } catch (e) {
    missingGroup = `${(e as Error).name} ${(e as { groups?: { error: { type: string } }[] }).groups?.map((g) => g.error.type).join(',')}`
  }
  let badTopic = ''
  try {
    await admin.createTopics({ topics: [{ topic: 5 as never }] })
  } catch (e) {
    badTopic = `${(e as Error).name}: ${(e as Error).message}`
  }
  // Partition reassignment (KIP-455) on a one-broker cluster: a move onto the broker a partition
  // is on completes at once; a broker that does not exist is refused per partition.
  const brokerId = cluster.brokers[0]!.nodeId
  await admin.alterPartitionReassignments({ topics: [{ topic, partitionAssignment: [{ partition: 0, replicas: [brokerId] }] }] })
  const reassigning = await admin.listPartitionReassignments({ topics: [{ topic, partitions: [0, 1] }] })
  let badReassignment = ''
  try {
    await admin.alterPartitionReassignments({ topics: [{ topic, partitionAssignment: [{ partition: 1, replicas: [brokerId + 100] }] }] })
  } catch (e) {
    const inner = (e as { errors?: { name: string; type: string; topic: string; partition: number }[] }).errors ?? []
    badReassignment = `${(e as Error).name} ${inner.map((x) => `${x.name} ${x.type} ${x.topic === topic} ${x.partition}`).join(',')}`
  }
  await admin.deleteTopics({ topics: [topic] })
  // Deletion reaches every broker's metadata a little later on KRaft clusters.
  let gone = false
  for (let i = 0; i < 100 && !gone; i++) {
    gone = !(await admin.listTopics()).includes(topic)
    if (!gone) await new Promise((r) => setTimeout(r, 100))
  }
  await admin.disconnect()

  return {
    badEvent,
    created,
    again,
    listed,
    partitions: metadata.topics[0]!.partitions.map((p) => ({ partitionId: p.partitionId, errorCode: p.partitionErrorCode, replicas: p.replicas.length, isr: p.isr.length })).sort((a, b) => a.partitionId - b.partitionId),
    offsets,
    byTime,
    future,
    afterSet: afterSet.map((t) => ({ ...t, topic: t.topic.slice(prefix.length) })),
    // kafkajs' setOffsets joins the group with a consumer (protocolType 'consumer'); committing
    // offsets for an empty group, as Kafka's AdminClient does, leaves it ''.
    groups: groups.length,
    described: described.groups.map((g) => ({ state: g.state, members: g.members.length, errorCode: (g as { errorCode?: number }).errorCode })),
    // The partition whose records were deleted (its low watermark moved to 5).
    afterDelete: afterDelete.filter((o) => o.partition === 0),
    configs: configs.resources.map((r) => ({
      errorCode: r.errorCode,
      resourceType: r.resourceType,
      entries: r.configEntries.map((c) => ({ configName: c.configName, configValue: c.configValue, isDefault: c.isDefault, configSource: c.configSource })).sort((a, b) => a.configName.localeCompare(b.configName)),
    })),
    cluster: { brokers: cluster.brokers.length, hasController: cluster.controller !== null, hasClusterId: typeof cluster.clusterId === 'string' && cluster.clusterId.length > 0 },
    deletedGroups: deletedGroups.map((g) => ({ errorCode: (g as { errorCode?: number }).errorCode })),
    missingGroup,
    badTopic,
    reassigning,
    badReassignment,
    gone,
    events,
  }
}
