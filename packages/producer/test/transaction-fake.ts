/**
 * A scripted fake transaction coordinator and partition leader (one FakeKafka broker, topic `t`
 * with 2 partitions) for the transactional producer's tests: every coordinator request and
 * produced batch is logged in order, error codes come from the script.
 */
import { ErrorCodes } from '@tidelog/protocol'
import { Producer, type ProducerOptions } from '../src/index.js'
import { NO_RESPONSE, type FakeRequest } from '../../client/test/fake-broker.js'
import { FakeKafka } from './fake-kafka.js'

const TRANSACTIONAL_BIT = 0x10

export interface Script {
  addPartitions: (call: number) => number
  endTxn: (call: number, req: FakeRequest) => number | 'hold'
  txnOffsetCommit: (call: number) => number
  addOffsets: (call: number) => number
}

let cleanup: (() => Promise<void>)[] = []
/** Closes what setup() started; each test file calls it afterEach. */
export async function closeAll(): Promise<void> {
  for (const c of cleanup.reverse()) await c()
  cleanup = []
}

export async function setup(script: Partial<Script> = {}, opts: Partial<ProducerOptions> = {}, tv2 = false) {
  const k = await FakeKafka.start(1)
  k.createTopic('t', 2)
  const b = k.brokers[0]!
  if (tv2) {
    // A Kafka 4.x cluster that finalized KIP-890's transaction.version 2 (ApiVersions v3+).
    b.on(18, () => ({ errorCode: 0, apiKeys: b.apiVersions, throttleTimeMs: 0, finalizedFeaturesEpoch: 1n, finalizedFeatures: [{ name: 'transaction.version', maxVersionLevel: 2, minVersionLevel: 0 }] }))
  }
  const log: string[] = []
  const held: FakeRequest[] = []
  let producerId = 7000n
  const calls = { add: 0, end: 0, offsets: 0, addOffsets: 0 }
  const produceVersions: number[] = []
  b.on(10, (req) => {
    const at = { nodeId: 0, host: '127.0.0.1', port: b.port, errorCode: 0, errorMessage: null }
    return req.header.apiVersion >= 4 ? { throttleTimeMs: 0, coordinators: req.body.coordinatorKeys.map((key: string) => ({ key, ...at })) } : { throttleTimeMs: 0, ...at }
  })
  b.on(22, (req) => {
    const { transactionalId, producerId: pid, producerEpoch } = req.body
    log.push(`InitProducerId(${transactionalId},${pid},${producerEpoch})`)
    // KIP-360: a bump keeps the producer id and raises the epoch.
    if (pid >= 0n) return { throttleTimeMs: 0, errorCode: 0, producerId: pid, producerEpoch: producerEpoch + 1 }
    return { throttleTimeMs: 0, errorCode: 0, producerId: producerId++, producerEpoch: 0 }
  })
  b.on(24, (req) => {
    const code = script.addPartitions?.(calls.add++) ?? 0
    const topics = req.body.v3AndBelowTopics as { name: string; partitions: number[] }[]
    log.push(`AddPartitionsToTxn(${topics.map((t) => t.partitions.map((p) => `${t.name}-${p}`).join(',')).join(',')})=${code}`)
    return { throttleTimeMs: 0, resultsByTopicV3AndBelow: topics.map((t) => ({ name: t.name, resultsByPartition: t.partitions.map((p) => ({ partitionIndex: p, partitionErrorCode: code })) })) }
  })
  b.on(25, (req) => {
    const code = script.addOffsets?.(calls.addOffsets++) ?? 0
    log.push(`AddOffsetsToTxn(${req.body.groupId})${code === 0 ? '' : `=${code}`}`)
    return { throttleTimeMs: 0, errorCode: code }
  })
  b.on(26, (req) => {
    const code = script.endTxn?.(calls.end++, req) ?? 0
    log.push(`EndTxn v${req.header.apiVersion}(${req.body.committed ? 'commit' : 'abort'},${req.body.producerEpoch})${code === 'hold' ? '' : `=${code}`}`)
    if (code === 'hold') {
      held.push(req)
      return NO_RESPONSE
    }
    // v5 (KIP-890) bumps the epoch on every EndTxn and returns it.
    return { throttleTimeMs: 0, errorCode: code, producerId: req.body.producerId, producerEpoch: req.body.producerEpoch + 1 }
  })
  b.on(28, (req) => {
    const code = script.txnOffsetCommit?.(calls.offsets++) ?? 0
    log.push(`TxnOffsetCommit(${req.body.groupId},${req.body.generationId},${req.body.memberId})=${code}`)
    return { throttleTimeMs: 0, topics: req.body.topics.map((t: { name: string; partitions: { partitionIndex: number }[] }) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: code })) })) }
  })
  k.fault = (ctx) => {
    log.push(`Produce(${ctx.topic}-${ctx.partition},epoch ${ctx.header.producerEpoch},txn ${(ctx.header.attributes & TRANSACTIONAL_BIT) !== 0})`)
    produceVersions.push(k.brokers[0]!.requests.filter((r) => r.header.apiKey === 0).at(-1)!.header.apiVersion)
    return undefined
  }
  const p = new Producer({ brokers: k.bootstrap, transactionalId: 'tx', retryBackoffMs: 5, retryBackoffMaxMs: 20, reconnectBackoffMs: 5, lingerMs: 1, ...opts })
  cleanup.push(() => k.close(), () => p.close({ timeoutMs: 1000 }))
  return { k, b, p, log, held, produceVersions }
}

