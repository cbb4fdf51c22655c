/**
 * Transactional writes built from the codec alone (KIP-98's client side, version 1 of the
 * transaction protocol): InitProducerId, AddPartitionsToTxn, a transactional Produce, EndTxn.
 * Enough to leave committed and aborted transactions in a log for read_committed tests.
 */
import type { Cluster } from '@tidelog/client'
import { AddPartitionsToTxn, EndTxn, ErrorCodes, InitProducerId, ProtocolError, type RecordInput } from '@tidelog/protocol'
import type { TestProducer } from './produce.js'

export class TestTransactions {
  private producerId = -1n
  private producerEpoch = -1
  private sequence = 0

  constructor(
    private readonly producer: TestProducer,
    private readonly transactionalId: string,
  ) {}

  private get cluster(): Cluster {
    return this.producer.cluster
  }

  private async coordinator(): Promise<number> {
    return (await this.cluster.findCoordinator(this.transactionalId, 'transaction')).nodeId
  }

  private async retry<T>(what: string, fn: () => Promise<{ code: number; value: T }>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const { code, value } = await fn()
      if (code === ErrorCodes.NONE) return value
      const err = new ProtocolError(code, { api: what })
      if (!err.retriable && code !== ErrorCodes.CONCURRENT_TRANSACTIONS) throw err
      if (attempt > 100) throw err
      this.cluster.invalidateCoordinator(this.transactionalId, 'transaction')
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  async init(): Promise<void> {
    await this.retry('InitProducerId', async () => {
      const res = await this.cluster.send(await this.coordinator(), InitProducerId, { transactionalId: this.transactionalId, transactionTimeoutMs: 60_000 }, { maxVersion: 4 })
      this.producerId = res.producerId
      this.producerEpoch = res.producerEpoch
      return { code: res.errorCode, value: undefined }
    })
  }

  /** One transaction of `records` to a partition, committed or aborted. */
  async write(topic: string, partition: number, records: RecordInput[], commit: boolean): Promise<void> {
    await this.retry('AddPartitionsToTxn', async () => {
      const res = await this.cluster.send(
        await this.coordinator(),
        AddPartitionsToTxn,
        {
          v3AndBelowTransactionalId: this.transactionalId,
          v3AndBelowProducerId: this.producerId,
          v3AndBelowProducerEpoch: this.producerEpoch,
          v3AndBelowTopics: [{ name: topic, partitions: [partition] }],
        },
        { maxVersion: 3 },
      )
      return { code: res.resultsByTopicV3AndBelow![0]!.resultsByPartition[0]!.partitionErrorCode, value: undefined }
    })
    await this.producer.send(
      topic,
      partition,
      records,
      { isTransactional: true, producerId: this.producerId, producerEpoch: this.producerEpoch, baseSequence: this.sequence },
      this.transactionalId,
    )
    this.sequence += records.length
    await this.retry('EndTxn', async () => {
      const res = await this.cluster.send(
        await this.coordinator(),
        EndTxn,
        { transactionalId: this.transactionalId, producerId: this.producerId, producerEpoch: this.producerEpoch, committed: commit },
        { maxVersion: 4 },
      )
      return { code: res.errorCode, value: undefined }
    })
  }
}
