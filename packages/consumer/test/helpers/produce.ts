/**
 * Test data for consumer tests, written with the codec and the client only (no producer):
 * encodeRecordBatch + a Produce request to the partition's leader.
 */
import { Cluster } from '@tidelog/client'
import { ErrorCodes, Produce, ProtocolError, encodeRecordBatch, type EncodeRecordBatchInput, type RecordInput } from '@tidelog/protocol'

export class TestProducer {
  readonly cluster: Cluster

  constructor(brokers: string[] | string) {
    this.cluster = new Cluster({ brokers, clientId: 'consumer-test-producer', allowAutoTopicCreation: true })
  }

  /** Appends one batch to a partition; returns its base offset. */
  async send(topic: string, partition: number, records: RecordInput[], batch: Omit<EncodeRecordBatchInput, 'records'> = {}, transactionalId: string | null = null): Promise<bigint> {
    return this.sendBatch(topic, partition, encodeRecordBatch({ ...batch, records }), transactionalId)
  }

  async sendBatch(topic: string, partition: number, bytes: Uint8Array, transactionalId: string | null = null): Promise<bigint> {
    for (let attempt = 0; ; attempt++) {
      let leader = this.cluster.metadata.leader(topic, partition)
      if (leader === undefined) {
        await this.cluster.fetchMetadata([topic], { allowAutoTopicCreation: true })
        leader = this.cluster.metadata.leader(topic, partition)
      }
      if (leader === undefined) {
        if (attempt > 50) throw new Error(`no leader for ${topic}-${partition}`)
        await new Promise((r) => setTimeout(r, 100))
        continue
      }
      const res = await this.cluster.send(
        leader.nodeId,
        Produce,
        {
          transactionalId,
        acks: -1,
        timeoutMs: 10_000,
          topicData: [{ name: topic, partitionData: [{ index: partition, records: bytes }] }],
        },
        // Version 12 starts KIP-890's implicit transactions, which the helpers here do not speak.
        { maxVersion: 11 },
      )
      const p = res.responses[0]!.partitionResponses[0]!
      if (p.errorCode === ErrorCodes.NONE) return p.baseOffset
      const err = new ProtocolError(p.errorCode, { api: 'Produce', topic, partition })
      if (!err.retriable || attempt > 50) throw err
      await this.cluster.fetchMetadata([topic], { allowAutoTopicCreation: true })
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  /**
   * `count` records spread over `partitions` partitions round robin, `perBatch` per batch,
   * values "<prefix><i>" (i from `from`); key "k<i>".
   */
  async fill(topic: string, partitions: number, count: number, options: { from?: number; perBatch?: number; prefix?: string; valueBytes?: number; compression?: EncodeRecordBatchInput['compression'] } = {}): Promise<void> {
    const from = options.from ?? 0
    const perBatch = options.perBatch ?? 500
    const prefix = options.prefix ?? 'v'
    const byPartition: RecordInput[][] = Array.from({ length: partitions }, () => [])
    const pad = options.valueBytes !== undefined ? 'x'.repeat(options.valueBytes) : ''
    for (let i = from; i < from + count; i++) byPartition[i % partitions]!.push({ key: `k${i}`, value: `${prefix}${i}${pad}` })
    await Promise.all(
      byPartition.map(async (list, p) => {
        for (let i = 0; i < list.length; i += perBatch) await this.send(topic, p, list.slice(i, i + perBatch), { compression: options.compression })
      }),
    )
  }

  close(): Promise<void> {
    return this.cluster.close()
  }
}

export async function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}
