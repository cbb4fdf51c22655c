/**
 * A fake Kafka cluster for producer tests: FakeBrokers (from the client's tests) answering
 * InitProducerId and Produce with a small in-memory log that applies Kafka's idempotence rules
 * (ProducerStateManager): per producer id and partition, sequence numbers must follow on, a
 * retry of one of the last five batches is answered with its original offset, and a newer
 * epoch must start at sequence 0. Tests inject faults per request.
 */
import { ErrorCodes, decodeRecordBatch, readBatchHeader, type RecordBatchHeader } from '@tidelog/protocol'
import { FakeBroker, FakeClusterState, NO_RESPONSE, type FakeRequest } from '../../client/test/fake-broker.js'

export interface StoredRecord {
  offset: bigint
  key: string | null
  value: string | null
  producerId: bigint
  producerEpoch: number
  sequence: number
}

interface ProducerEntry {
  epoch: number
  lastSequence: number
  /** The last five batches: first and last sequence, base offset. */
  batches: { first: number; last: number; offset: bigint }[]
}

class FakePartition {
  readonly records: StoredRecord[] = []
  readonly producers = new Map<bigint, ProducerEntry>()
  logStartOffset = 0n

  get nextOffset(): bigint {
    return BigInt(this.records.length) + this.logStartOffset
  }
}

/**
 * What to do with one partition's batch: append normally (undefined), answer an error code
 * without appending, or append and then cut the connection before answering ('append-drop'),
 * or cut it without appending ('drop').
 */
export type Fault = number | 'drop' | 'append-drop' | undefined

export interface ProduceContext {
  broker: FakeBroker
  topic: string
  partition: number
  header: RecordBatchHeader
  /** The batch's first record's value (faults that depend on content hit every attempt alike). */
  firstValue: string | null
  /** Produce requests this cluster has seen so far, this one included. */
  requestCount: number
}

export class FakeKafka {
  readonly state = new FakeClusterState()
  readonly brokers: FakeBroker[] = []
  private readonly logs = new Map<string, FakePartition>()
  private nextProducerId = 1000n
  private produceRequests = 0
  /** Decides a fault per partition batch. */
  fault: (ctx: ProduceContext) => Fault = () => undefined
  /** Error code for InitProducerId, per call (0: success). */
  initProducerIdError: (call: number) => number = () => 0
  initProducerIdCalls = 0
  /** Every batch header received, in arrival order (to check sequences and epochs). */
  readonly received: { topic: string; partition: number; header: RecordBatchHeader; broker: number }[] = []

  static async start(brokers = 1): Promise<FakeKafka> {
    const k = new FakeKafka()
    for (let i = 0; i < brokers; i++) {
      const b = await FakeBroker.start({ nodeId: i, state: k.state })
      b.on(22, () => k.initProducerId())
      b.on(0, (req) => k.produce(b, req))
      k.brokers.push(b)
    }
    return k
  }

  get bootstrap(): string[] {
    return this.brokers.map((b) => b.address)
  }

  /** Creates a topic whose partitions are led by the given node ids (round robin over the brokers by default). */
  createTopic(name: string, partitions: number, leaders?: number[]): void {
    this.state.topics.push({ name, leaders: leaders ?? Array.from({ length: partitions }, (_, i) => this.brokers[i % this.brokers.length]!.nodeId) })
  }

  setLeader(topic: string, partition: number, leader: number): void {
    const t = this.state.topics.find((x) => x.name === topic)!
    t.leaders[partition] = leader
    t.leaderEpochs ??= t.leaders.map(() => 0)
    t.leaderEpochs[partition] = (t.leaderEpochs[partition] ?? 0) + 1
  }

  log(topic: string, partition: number): FakePartition {
    const key = `${topic}-${partition}`
    let p = this.logs.get(key)
    if (p === undefined) this.logs.set(key, (p = new FakePartition()))
    return p
  }

  /** Forgets every producer's state for a partition, as when retention removed its batches. */
  loseProducerState(topic: string, partition: number): void {
    const p = this.log(topic, partition)
    p.producers.clear()
    p.logStartOffset = p.nextOffset
    p.records.length = 0
  }

  async close(): Promise<void> {
    for (const b of this.brokers) await b.close()
  }

  private initProducerId(): unknown {
    const call = this.initProducerIdCalls++
    const errorCode = this.initProducerIdError(call)
    if (errorCode !== 0) return { throttleTimeMs: 0, errorCode, producerId: -1n, producerEpoch: -1 }
    return { throttleTimeMs: 0, errorCode: 0, producerId: this.nextProducerId++, producerEpoch: 0 }
  }

  private produce(broker: FakeBroker, req: FakeRequest): unknown {
    const count = ++this.produceRequests
    let drop = false
    const responses = req.body.topicData.map((td: { name: string; partitionData: { index: number; records: Uint8Array }[] }) => ({
      name: td.name,
      partitionResponses: td.partitionData.map((pd) => {
        const header = readBatchHeader(pd.records, 0)
        this.received.push({ topic: td.name, partition: pd.index, header, broker: broker.nodeId })
        const out = (errorCode: number, baseOffset = -1n, logStartOffset = -1n) => ({
          index: pd.index,
          errorCode,
          baseOffset,
          logAppendTimeMs: -1n,
          logStartOffset,
          recordErrors: [],
          errorMessage: null,
        })
        const t = this.state.topics.find((x) => x.name === td.name)
        if (t === undefined || pd.index >= t.leaders.length) return out(ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION)
        if (t.leaders[pd.index] !== broker.nodeId) return out(ErrorCodes.NOT_LEADER_OR_FOLLOWER)
        const first = decodeRecordBatch(pd.records).toArray()[0]
        const firstValue = first?.value == null ? null : first.value.toString()
        const fault = this.fault({ broker, topic: td.name, partition: pd.index, header, firstValue, requestCount: count })
        if (fault === 'drop') {
          drop = true
          return out(ErrorCodes.NONE)
        }
        if (typeof fault === 'number') return out(fault)
        const log = this.log(td.name, pd.index)
        const result = this.append(log, pd.records, header)
        if (fault === 'append-drop') drop = true
        return out(result.errorCode, result.baseOffset, log.logStartOffset)
      }),
    }))
    if (drop) {
      req.conn.socket.destroy()
      return NO_RESPONSE
    }
    if (req.body.acks === 0) return NO_RESPONSE
    return { responses, throttleTimeMs: 0 }
  }

  /** Kafka's producer state checks, then the append. */
  private append(log: FakePartition, bytes: Uint8Array, h: RecordBatchHeader): { errorCode: number; baseOffset: bigint } {
    const first = h.baseSequence
    const last = first + h.lastOffsetDelta
    if (h.producerId >= 0n) {
      const entry = log.producers.get(h.producerId)
      if (entry === undefined) {
        // A producer the partition does not know must start at 0 (after a loss of state, Kafka
        // answers UNKNOWN_PRODUCER_ID so the client can tell).
        if (first !== 0) return { errorCode: log.logStartOffset > 0n ? ErrorCodes.UNKNOWN_PRODUCER_ID : ErrorCodes.OUT_OF_ORDER_SEQUENCE_NUMBER, baseOffset: -1n }
      } else {
        if (h.producerEpoch < entry.epoch) return { errorCode: ErrorCodes.INVALID_PRODUCER_EPOCH, baseOffset: -1n }
        if (h.producerEpoch === entry.epoch) {
          const dup = entry.batches.find((b) => b.first === first && b.last === last)
          if (dup !== undefined) return { errorCode: ErrorCodes.NONE, baseOffset: dup.offset }
          if (first !== entry.lastSequence + 1) return { errorCode: ErrorCodes.OUT_OF_ORDER_SEQUENCE_NUMBER, baseOffset: -1n }
        } else if (first !== 0) {
          return { errorCode: ErrorCodes.OUT_OF_ORDER_SEQUENCE_NUMBER, baseOffset: -1n }
        }
      }
    }
    const baseOffset = log.nextOffset
    const batch = decodeRecordBatch(bytes)
    let i = 0
    for (const r of batch) {
      log.records.push({
        offset: baseOffset + BigInt(i),
        key: r.key === null ? null : r.key.toString(),
        value: r.value === null ? null : r.value.toString(),
        producerId: h.producerId,
        producerEpoch: h.producerEpoch,
        sequence: first + i,
      })
      i++
    }
    if (h.producerId >= 0n) {
      let entry = log.producers.get(h.producerId)
      if (entry === undefined || entry.epoch !== h.producerEpoch) {
        entry = { epoch: h.producerEpoch, lastSequence: -1, batches: [] }
        log.producers.set(h.producerId, entry)
      }
      entry.lastSequence = last
      entry.batches.push({ first, last, offset: baseOffset })
      if (entry.batches.length > 5) entry.batches.shift()
    }
    return { errorCode: ErrorCodes.NONE, baseOffset }
  }
}
