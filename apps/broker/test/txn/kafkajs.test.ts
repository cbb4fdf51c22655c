import { Kafka, logLevel } from 'kafkajs'
import { describe, expect, it } from 'vitest'
import { kafkajsVersion, recordsPeers } from '../../../../test/helpers/peers.js'
import { describeProducers, describeTxn, start } from './helpers.js'

describe('kafkajs 2.2.4 transactions against the broker', () => {
  recordsPeers(() => [{ peer: 'kafkajs', version: kafkajsVersion() }])

  it('producer.transaction(): send and sendOffsets commit together; an aborted transaction leaves no offsets', async () => {
    const { b, c } = await start()
    const kafka = new Kafka({ clientId: 'txn-test', brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING, retry: { retries: 5 } })
    const producer = kafka.producer({ transactionalId: 'kjs-tx', idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    try {
      const tx = await producer.transaction()
      await tx.send({ topic: 't', messages: [{ partition: 0, value: 'a' }, { partition: 1, value: 'b' }] })
      await tx.sendOffsets({ consumerGroupId: 'kjs-group', topics: [{ topic: 't', partitions: [{ partition: 0, offset: '5' }] }] })
      await tx.commit()
      expect((await describeTxn(c, 'kjs-tx')).transactionState).toBe('CompleteCommit')
      for (const p of [0, 1]) expect((await describeProducers(c, p)).activeProducers[0].currentTxnStartOffset).toBe(-1n)

      const tx2 = await producer.transaction()
      await tx2.send({ topic: 't', messages: [{ partition: 0, value: 'c' }] })
      await tx2.sendOffsets({ consumerGroupId: 'kjs-group', topics: [{ topic: 't', partitions: [{ partition: 0, offset: '9' }] }] })
      await tx2.abort()
      expect((await describeTxn(c, 'kjs-tx')).transactionState).toBe('CompleteAbort')
    } finally {
      await producer.disconnect()
    }
    const admin = kafka.admin()
    await admin.connect()
    try {
      const offsets = await admin.fetchOffsets({ groupId: 'kjs-group', topics: ['t'] })
      expect(offsets[0]!.partitions.find((p) => p.partition === 0)!.offset).toBe('5')
    } finally {
      await admin.disconnect()
    }
  })
})
