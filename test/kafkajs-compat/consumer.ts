import { retrying, until, type KafkaModule } from './types.js'

/**
 * "Consuming Messages": eachMessage from the beginning, headers and keys, commits on stop,
 * eachBatch with manual resolveOffset, seek, pause / resume, commitOffsets, describeGroup,
 * and the deterministic instrumentation events in order.
 */
export async function consumerProgram(lib: KafkaModule, brokers: string[], prefix: string) {
  const { Kafka, logLevel } = lib
  const kafka = new Kafka({ clientId: 'my-app', brokers, logLevel: logLevel.NOTHING })
  const topic = `${prefix}-events`
  const admin = kafka.admin()
  await admin.connect()
  await retrying(() => admin.createTopics({ topics: [{ topic, numPartitions: 3 }] }))
  const producer = kafka.producer()
  await producer.connect()
  const messages = Array.from({ length: 60 }, (_, i) => ({ key: `key-${i % 7}`, value: `value-${i}`, headers: { index: String(i) } }))
  await producer.send({ topic, messages: messages.slice(0, 30) })
  await producer.send({ topic, messages: messages.slice(30) })

  // 1. eachMessage from the beginning, one group member.
  const groupId = `${prefix}-group`
  // A fresh cluster creates its offsets topic on the first coordinator lookup; the admin waits
  // for it, so the consumer below joins at once (kafkajs would otherwise crash and restart once).
  await retrying(() => admin.fetchOffsets({ groupId, topics: [topic] }))
  const consumer = kafka.consumer({ groupId, heartbeatInterval: 500, sessionTimeout: 10_000, maxWaitTimeInMs: 100 })
  const events: string[] = []
  const batches: string[] = []
  // Deliveries and group events in one timeline: kafkajs is at-least-once, so after a rebalance
  // or a crash (a loaded machine can cause either) records since the last commit come again.
  const timeline: ({ partition: number; offset: number } | 'rejoined')[] = []
  for (const name of ['CONNECT', 'GROUP_JOIN', 'START_BATCH_PROCESS', 'END_BATCH_PROCESS', 'COMMIT_OFFSETS', 'CRASH', 'STOP', 'DISCONNECT'] as const) {
    consumer.on(consumer.events[name], (e: { payload: any }) => {
      events.push(name)
      if (name === 'START_BATCH_PROCESS') batches.push(`${e.payload.partition}:${e.payload.firstOffset}-${e.payload.lastOffset}`)
      if (name === 'GROUP_JOIN' || name === 'CRASH') timeline.push('rejoined')
    })
  }
  let joinAssignment: unknown
  consumer.on(consumer.events.GROUP_JOIN, (e: { payload: any }) => (joinAssignment = e.payload.memberAssignment))
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const seen: { partition: number; offset: string; key: string; value: string; headers: Record<string, string>; timestampIsString: boolean }[] = []
  const unique = new Set<string>()
  await consumer.run({
    eachMessage: async ({ topic: t, partition, message }) => {
      if (t !== topic) return
      timeline.push({ partition, offset: Number(message.offset) })
      if (unique.has(`${partition}:${message.offset}`)) return
      unique.add(`${partition}:${message.offset}`)
      seen.push({
        partition,
        offset: message.offset,
        key: message.key!.toString(),
        value: message.value!.toString(),
        headers: Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)])),
        timestampIsString: typeof message.timestamp === 'string' && /^\d+$/.test(message.timestamp),
      })
    },
  })
  await until(() => unique.size >= 60, '60 distinct messages')
  const group = await consumer.describeGroup()
  await consumer.disconnect()
  const committed = await admin.fetchOffsets({ groupId, topics: [topic] })

  // 2. eachBatch resolving only the first half of each batch, without auto-resolve.
  const batchGroup = `${prefix}-batch-group`
  const batcher = kafka.consumer({ groupId: batchGroup, maxWaitTimeInMs: 100 })
  await batcher.connect()
  await batcher.subscribe({ topic, fromBeginning: true })
  const handled = new Set<number>()
  await batcher.run({
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, isRunning, isStale }) => {
      const half = batch.messages.slice(0, Math.ceil(batch.messages.length / 2))
      for (const m of half) {
        if (!isRunning() || isStale()) break
        resolveOffset(m.offset)
      }
      handled.add(batch.partition)
    },
  })
  await until(() => handled.size === 3, 'a batch from each partition')
  await batcher.stop()
  await batcher.disconnect()
  const halfCommitted = await admin.fetchOffsets({ groupId: batchGroup, topics: [topic] })

  // 3. seek before the partition is assigned, then commitOffsets by hand.
  const seekGroup = `${prefix}-seek-group`
  const seeker = kafka.consumer({ groupId: seekGroup, maxWaitTimeInMs: 100 })
  await seeker.connect()
  await seeker.subscribe({ topic, fromBeginning: true })
  const fromSeek: string[] = []
  await seeker.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      if (partition === 0) fromSeek.push(message.offset)
    },
  })
  seeker.seek({ topic, partition: 0, offset: '10' })
  await until(() => fromSeek.length > 0 && fromSeek[fromSeek.length - 1] === String(Number(committed[0]!.partitions[0]!.offset) - 1), 'partition 0 read to its end')
  await seeker.commitOffsets([{ topic, partition: 1, offset: '3' }])
  seeker.pause([{ topic, partitions: [2] }])
  const paused = seeker.paused()
  seeker.resume([{ topic, partitions: [2] }])
  await seeker.disconnect()
  const manual = await admin.fetchOffsets({ groupId: seekGroup, topics: [topic] })

  await producer.disconnect()
  await admin.deleteTopics({ topics: [topic] })
  await admin.disconnect()

  // Timing decides how records are split into batches, so only the kinds and their order count.
  const order = events.filter((e, i) => i === 0 || e !== events[i - 1])
  const rejoined = events.filter((e) => e === 'GROUP_JOIN').length > 1 || events.includes('CRASH')
  return {
    atLeastOnce: deliveryRules(timeline),
    seen: seen.sort((a, b) => a.partition - b.partition || Number(a.offset) - Number(b.offset)),
    committed: committed.map((t) => ({ ...t, topic: t.topic.slice(prefix.length) })),
    halfCommittedBelowEnd: halfCommitted[0]!.partitions.map((p, i) => Number(p.offset) > 0 && Number(p.offset) <= Number(committed[0]!.partitions[i]!.offset)),
    fromSeekStart: fromSeek[0],
    manual: manual[0]!.partitions.map((p) => ({ partition: p.partition, offset: p.offset })),
    paused: paused.map((t) => ({ ...t, topic: t.topic.slice(prefix.length) })),
    joinAssignment: Object.fromEntries(Object.entries(joinAssignment as Record<string, number[]>).map(([t, ps]) => [t.slice(prefix.length), [...ps].sort()])),
    group: { state: group.state, protocol: group.protocol, protocolType: group.protocolType, members: group.members.length },
    eventOrder: {
      first: order.slice(0, 3),
      last: order.slice(-3),
      // Every batch: START, END, then the commit of what it resolved.
      // After a rebalance or a crash a batch may end without its commit (the generation is
      // over) and the group is joined again; without one, the strict form.
      perBatch: (rejoined
        ? /^CONNECT CONNECT GROUP_JOIN (START_BATCH_PROCESS (END_BATCH_PROCESS (COMMIT_OFFSETS )?)?|(CRASH )?(CONNECT )*GROUP_JOIN )+STOP DISCONNECT$/
        : /^CONNECT CONNECT GROUP_JOIN (START_BATCH_PROCESS END_BATCH_PROCESS COMMIT_OFFSETS )+STOP DISCONNECT$/
      ).test(events.join(' ')) || events.join(' '),
      batchesSeen: batches.length > 0,
    },
  }
}

/**
 * What kafkajs guarantees a group member: per partition, offsets in order from the start with
 * none skipped; going back (a redelivery) only after a rebalance or a crash since that
 * partition's previous record. Returns 'ok' or the first violation.
 */
function deliveryRules(timeline: ({ partition: number; offset: number } | 'rejoined')[]): string {
  const last = new Map<number, number>()
  const rejoinedSince = new Set<number>()
  for (const step of timeline) {
    if (step === 'rejoined') {
      for (const p of last.keys()) rejoinedSince.add(p)
      continue
    }
    const { partition, offset } = step
    const prev = last.get(partition) ?? -1
    if (offset > prev + 1) return `partition ${partition}: offset ${offset} after ${prev} (skipped records)`
    if (offset <= prev && !rejoinedSince.has(partition)) return `partition ${partition}: offset ${offset} again after ${prev} without a rebalance`
    last.set(partition, offset)
    rejoinedSince.delete(partition)
  }
  return 'ok'
}
