import { retrying, until, type KafkaModule } from './types.js'

const INPUT_PER_PARTITION = 10

/** What a caught error looks like to a kafkajs program: its class name, message and flags. */
function described(e: unknown, prefix: string) {
  const err = e as { name?: string; message?: string; retriable?: boolean; type?: string }
  return { name: err.name, message: String(err.message).replaceAll(prefix, ''), retriable: err.retriable, type: err.type }
}

async function caught(fn: () => Promise<unknown>, prefix: string) {
  try {
    await fn()
    return 'no error'
  } catch (e) {
    return described(e, prefix)
  }
}

/**
 * "Transactions": producer.transaction() with send, sendBatch, commit, abort, isActive and the
 * errors for misuse; the eachBatch consume-transform-produce loop with sendOffsets; a second
 * producer with the same transactionalId fencing the first. Read back with a read_committed
 * consumer (kafkajs' default) and a read_uncommitted one, and the group's committed offsets.
 */
export async function transactionsProgram(lib: KafkaModule, brokers: string[], prefix: string) {
  const { Kafka, logLevel } = lib
  const kafka = new Kafka({ clientId: 'my-app', brokers, logLevel: logLevel.NOTHING })
  const input = `${prefix}-input`
  const output = `${prefix}-output`
  const admin = kafka.admin()
  await admin.connect()
  await retrying(() => admin.createTopics({ topics: [{ topic: input, numPartitions: 2 }, { topic: output, numPartitions: 2 }] }))
  const plain = kafka.producer()
  await plain.connect()
  for (const partition of [0, 1]) {
    await plain.send({ topic: input, messages: Array.from({ length: INPUT_PER_PARTITION }, (_, i) => ({ key: `k${i}`, value: `in-${partition}-${i}`, partition })) })
  }
  const withoutId = await caught(() => plain.transaction(), prefix)
  await plain.disconnect()

  const transactionalId = `${prefix}-txn`
  const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()

  // Committed: send and sendBatch in one transaction.
  const committed = await producer.transaction()
  const activeBefore = committed.isActive()
  await committed.send({ topic: output, messages: Array.from({ length: 3 }, (_, i) => ({ value: `committed-${i}`, partition: 0 })) })
  await committed.sendBatch({ topicMessages: [{ topic: output, messages: Array.from({ length: 3 }, (_, i) => ({ value: `committed-batch-${i}`, partition: 1 })) }] })
  const concurrent = await caught(() => producer.transaction(), prefix)
  await committed.commit()
  const afterEnd = {
    active: committed.isActive(),
    send: await caught(() => committed.send({ topic: output, messages: [{ value: 'late' }] }), prefix),
    commit: await caught(() => committed.commit(), prefix),
    abort: await caught(() => committed.abort(), prefix),
  }

  // Aborted: never read by read_committed consumers.
  const aborted = await producer.transaction()
  await aborted.send({ topic: output, messages: Array.from({ length: 3 }, (_, i) => ({ value: `aborted-${i}`, partition: 0 })) })
  await aborted.abort()
  const empty = await producer.transaction()
  await empty.commit()

  // Consume-transform-produce with eachBatch: the output and the input's offsets commit
  // together. The very first attempt aborts and throws, so its batch comes again.
  const groupId = `${prefix}-copier`
  await retrying(() => admin.fetchOffsets({ groupId, topics: [input] }))
  const copier = kafka.consumer({ groupId, maxWaitTimeInMs: 100 })
  await copier.connect()
  await copier.subscribe({ topic: input, fromBeginning: true })
  let attempts = 0
  let abortedAttempts = 0
  let copied = 0
  await copier.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
      if (batch.messages.length === 0) return
      attempts++
      const txn = await producer.transaction()
      try {
        await txn.send({ topic: output, messages: batch.messages.map((m) => ({ key: m.key, value: `copy-of-${m.value!.toString()}`, partition: batch.partition })) })
        await txn.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }] }] })
        if (attempts === 1) throw new Error('first attempt fails')
        await txn.commit()
      } catch (e) {
        abortedAttempts++
        await txn.abort()
        throw e
      }
      for (const m of batch.messages) resolveOffset(m.offset)
      copied += batch.messages.length
      await heartbeat()
    },
  })
  await until(() => copied >= 2 * INPUT_PER_PARTITION, 'the copier to copy every input record', 60_000)
  await copier.disconnect()
  const copierOffsets = (await admin.fetchOffsets({ groupId, topics: [input] }))[0]!.partitions.map(({ partition, offset }) => ({ partition, offset })).sort((a, b) => a.partition - b.partition)

  // Fencing: a second producer with the same transactionalId ends the first one's transaction.
  const zombie = await producer.transaction()
  await zombie.send({ topic: output, messages: [{ value: 'zombie-0', partition: 1 }] })
  const successor = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 })
  await successor.connect()
  const next = await successor.transaction()
  await next.send({ topic: output, messages: [{ value: 'successor-0', partition: 1 }] })
  await next.commit()
  const fenced = {
    send: await caught(() => zombie.send({ topic: output, messages: [{ value: 'zombie-1', partition: 1 }] }), prefix),
    commit: await caught(() => zombie.commit(), prefix),
  }
  await successor.disconnect()
  await producer.disconnect()

  const read = async (readUncommitted: boolean, count: number) => {
    const consumer = kafka.consumer({ groupId: `${prefix}-reader-${readUncommitted}`, readUncommitted, maxWaitTimeInMs: 100 })
    const got: string[][] = [[], []]
    await consumer.connect()
    await consumer.subscribe({ topic: output, fromBeginning: true })
    await consumer.run({ eachMessage: async ({ partition, message }) => void got[partition]!.push(message.value!.toString()) })
    // The successor's record is the last one written: once it is in, everything before it is.
    await until(() => got[0]!.length + got[1]!.length >= count && got[1]!.includes('successor-0'), `${count} records of ${output}`, 60_000)
    await consumer.disconnect()
    return got
  }
  const expected = 6 + 2 * INPUT_PER_PARTITION + 1
  const readCommitted = await read(false, expected)
  // read_uncommitted shows what was aborted: the rejected first attempt's copies and the zombie's record.
  const readAll = (await read(true, expected + 3 + 1)).flat()
  const endOffsets = (await admin.fetchTopicOffsets(output)).map(({ partition, high }) => ({ partition, high })).sort((a, b) => a.partition - b.partition)
  await admin.deleteTopics({ topics: [input, output] })
  await admin.disconnect()

  return {
    withoutId,
    activeBefore,
    concurrent,
    afterEnd,
    abortedAttempts,
    readCommitted,
    uncommittedSawAborted: readAll.some((v) => v.startsWith('aborted-')),
    uncommittedSawZombie: readAll.includes('zombie-0'),
    copierOffsets,
    fenced,
    // Control records (commit and abort markers) take offsets too: the end offsets count them.
    endOffsetsAboveRecords: endOffsets.map(({ partition, high }) => Number(high) > readCommitted[partition]!.length),
  }
}
