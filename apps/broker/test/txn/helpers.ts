import { ApiKeys, ZERO_UUID } from '@tidelog/protocol'
import { afterEach, expect } from 'vitest'
import { type Broker, type BrokerOptions, startBroker } from '../../src/index.js'
import { makeBatch } from '../helpers/batches.js'
import { RawClient } from '../helpers/raw-client.js'
import { tempDir } from '../helpers/tmp.js'

const cleanup: (() => unknown)[] = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f()
})

export const TOPIC = 't'

export interface Session {
  b: Broker
  c: RawClient
  dataDir: string
  /** Closes this client and the broker (cleanly). */
  close(): Promise<void>
}

/** A broker with topic `t` of `partitions` partitions, and a raw client on it. */
export async function start(opts: Partial<BrokerOptions> = {}, dataDir = tempDir('tidelog-txn-'), partitions = 2): Promise<Session> {
  const b = await startBroker({ port: 0, dataDir, numPartitions: partitions, ...opts })
  let closed = false
  cleanup.push(() => (closed ? undefined : b.close()))
  const c = await RawClient.connect(b.port)
  cleanup.push(() => c.close())
  const meta = await c.request(ApiKeys.Metadata, 12, { topics: [{ name: TOPIC, topicId: ZERO_UUID }], allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false })
  expect(meta.topics[0].errorCode).toBe(0)
  return {
    b,
    c,
    dataDir,
    async close() {
      c.close()
      closed = true
      await b.close()
    },
  }
}

export async function connect(b: Broker): Promise<RawClient> {
  const c = await RawClient.connect(b.port)
  cleanup.push(() => c.close())
  return c
}

export async function init(c: RawClient, id: string, version = 5, extra: { producerId?: bigint; producerEpoch?: number; timeoutMs?: number } = {}) {
  return c.request(ApiKeys.InitProducerId, version, {
    transactionalId: id,
    transactionTimeoutMs: extra.timeoutMs ?? 60_000,
    producerId: extra.producerId ?? -1n,
    producerEpoch: extra.producerEpoch ?? -1,
  })
}

/** AddPartitionsToTxn v3 (the client form); returns the error per partition. */
export async function addPartitions(c: RawClient, id: string, producerId: bigint, producerEpoch: number, partitions: number[], version = 3): Promise<number[]> {
  const r = await c.request(ApiKeys.AddPartitionsToTxn, version, {
    v3AndBelowTransactionalId: id,
    v3AndBelowProducerId: producerId,
    v3AndBelowProducerEpoch: producerEpoch,
    v3AndBelowTopics: [{ name: TOPIC, partitions }],
  })
  return r.resultsByTopicV3AndBelow[0].resultsByPartition.map((p: { partitionErrorCode: number }) => p.partitionErrorCode)
}

/** A transactional produce of `n` records to one partition; returns its partition response. */
export async function produce(
  c: RawClient,
  id: string | null,
  producerId: bigint,
  producerEpoch: number,
  partition: number,
  baseSequence: number,
  opts: { version?: number; n?: number; transactional?: boolean } = {},
) {
  const r = await c.request(ApiKeys.Produce, opts.version ?? 11, {
    transactionalId: id,
    acks: -1,
    timeoutMs: 5000,
    topicData: [
      {
        name: TOPIC,
        partitionData: [{ index: partition, records: makeBatch(opts.n ?? 2, { producerId, producerEpoch, baseSequence, isTransactional: opts.transactional ?? true }) }],
      },
    ],
  })
  return r.responses[0].partitionResponses[0]
}

export async function endTxn(c: RawClient, id: string, producerId: bigint, producerEpoch: number, committed: boolean, version = 4) {
  return c.request(ApiKeys.EndTxn, version, { transactionalId: id, producerId, producerEpoch, committed })
}

export async function describeTxn(c: RawClient, id: string) {
  const r = await c.request(ApiKeys.DescribeTransactions, 0, { transactionalIds: [id] })
  return r.transactionStates[0]
}

export async function describeProducers(c: RawClient, partition: number) {
  const r = await c.request(ApiKeys.DescribeProducers, 0, { topics: [{ name: TOPIC, partitionIndexes: [partition] }] })
  return r.topics[0].partitions[0]
}

/** Fetch (read_uncommitted or read_committed) of one partition from offset 0: the high watermark, LSO and aborted list. */
export async function fetchPartition(c: RawClient, partition: number, isolationLevel = 0) {
  const r = await c.request(ApiKeys.Fetch, 11, {
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: 1 << 20,
    isolationLevel,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [{ topic: TOPIC, partitions: [{ partition, currentLeaderEpoch: -1, fetchOffset: 0n, logStartOffset: -1n, partitionMaxBytes: 1 << 20 }] }],
    forgottenTopicsData: [],
    rackId: '',
  })
  return r.responses[0].partitions[0]
}
