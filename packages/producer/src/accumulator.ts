import type { BrokerInfo, ClusterMetadata } from '@tidelog/client'
import { BatchState, CompressionRatio, ProducerBatch, type FlushWaiter } from './batch-builder.js'
import type { Delivery } from './delivery.js'
import { nextStickyPartition, type PartitionerContext, type TopicPartitioning } from './partitioners/index.js'
import type { RecordParts } from './record-writer.js'

/**
 * One partition's queue of batches (oldest first; the last may be open), its leader as of the
 * metadata snapshot last looked at, and its idempotence bookkeeping.
 */
export class PartitionQueue {
  readonly topic: string
  readonly partition: number
  readonly owner: TopicQueues
  readonly batches: ProducerBatch[] = []
  /** The batch taking records, if any (always the last of `batches`). */
  open: ProducerBatch | undefined
  /** Bytes of the last batch sent (header included): the next batch's first buffer size. */
  lastBatchBytes = 0
  private leaderOf: ClusterMetadata | undefined
  private leaderInfo: BrokerInfo | undefined

  // Idempotence (Java's TxnPartitionEntry): the producer id and epoch the sequences below
  // belong to, the next sequence to hand out, the last one acknowledged, and the batches that
  // hold sequences and are not finished, in sequence order.
  producerId = -1n
  producerEpoch = -1
  nextSequence = 0
  lastAckedSequence = -1
  readonly inflight: ProducerBatch[] = []
  /** After a batch with a sequence expired: the sequence that follows it (Java's unresolved sequence), else -1. */
  unresolvedSequence = -1

  constructor(owner: TopicQueues, partition: number) {
    this.owner = owner
    this.topic = owner.topic
    this.partition = partition
    const kept = owner.retired?.[partition]
    if (kept !== undefined) {
      this.producerId = kept.producerId
      this.producerEpoch = kept.producerEpoch
      this.nextSequence = kept.nextSequence
      this.lastAckedSequence = kept.lastAckedSequence
    }
  }

  /** The partition's leader in `meta`, cached per snapshot. */
  leader(meta: ClusterMetadata): BrokerInfo | undefined {
    if (this.leaderOf !== meta) {
      this.leaderOf = meta
      this.leaderInfo = meta.leader(this.topic, this.partition)
    }
    return this.leaderInfo
  }
}

/**
 * What an idle topic's partition leaves behind when its queue is dropped: the broker still
 * expects the next sequence from this producer id and epoch (Java keeps these per partition
 * for the producer's life likewise).
 */
export interface RetiredSequence {
  producerId: bigint
  producerEpoch: number
  nextSequence: number
  lastAckedSequence: number
}

/** A topic's partition queues and partitioner state. */
export class TopicQueues implements TopicPartitioning {
  readonly topic: string
  readonly queues: PartitionQueue[] = []
  /** performance.now() of the last send() that queued a record here (metadata.max.idle.ms). */
  lastUsed = 0
  /** Batches created here and not yet Acked or Failed, queued or in flight. */
  unfinished = 0
  /** Sequence state of the partitions of an earlier, expired incarnation of this topic. */
  retired: (RetiredSequence | undefined)[] | undefined
  readonly ratio = new CompressionRatio()
  partitionCount = 0
  context: PartitionerContext
  counter = 0
  /** The uniform sticky partition, -1 before the first keyless record. */
  sticky = -1
  /** The batch the current sticky run fills; undefined until the run's first record. */
  stickyBatch: ProducerBatch | undefined
  private availableOf: ClusterMetadata | undefined
  private availableList: number[] = []
  private meta: ClusterMetadata | undefined

  constructor(topic: string) {
    this.topic = topic
    this.context = Object.freeze({ topic, partitionCount: 0 })
  }

  /** Brings the partition count up to date with a metadata snapshot. */
  sync(meta: ClusterMetadata, partitionCount: number): void {
    this.meta = meta
    if (partitionCount !== this.partitionCount) {
      this.partitionCount = partitionCount
      this.context = Object.freeze({ topic: this.topic, partitionCount })
      if (this.sticky >= partitionCount) {
        this.sticky = -1
        this.stickyBatch = undefined
      }
    }
  }

  available(): readonly number[] {
    const meta = this.meta!
    if (this.availableOf !== meta) {
      this.availableOf = meta
      const out: number[] = []
      const t = meta.topic(this.topic)
      if (t !== undefined) for (const p of t.partitions) if (p.leader >= 0) out.push(p.partition)
      if (out.length === 0) for (let i = 0; i < this.partitionCount; i++) out.push(i)
      this.availableList = out
    }
    return this.availableList
  }

  queue(partition: number): PartitionQueue {
    return (this.queues[partition] ??= new PartitionQueue(this, partition))
  }
}

/**
 * The record accumulator: per-partition batches, the memory they hold (bufferMemory), and the
 * set of batches not yet finished (for flush). The sender takes batches from here.
 */
export class Accumulator {
  private readonly topics = new Map<string, TopicQueues>()
  /** Queues holding at least one batch; the sender looks at these only. */
  readonly pending = new Set<PartitionQueue>()
  /** Every batch created and not yet Acked or Failed. */
  readonly incomplete = new Set<ProducerBatch>()
  used = 0
  /** A send() is waiting for room: every batch counts as ready, as in Java when memory runs out. */
  waitingForRoom = false
  /** Called when memory is released while a send() waits for room. */
  onRoom: (() => void) | undefined
  private lastTopic: TopicQueues | undefined
  /** Idempotence sequence state of expired topics' partitions that had any. */
  private readonly retired = new Map<string, (RetiredSequence | undefined)[]>()

  constructor(
    readonly batchBytes: number,
    readonly bufferMemory: number,
    /** Called when a batch opens (the sender arms its linger timer) or fills up (no need to wait). */
    private readonly onBatch: () => void,
  ) {}

  topic(name: string): TopicQueues {
    const last = this.lastTopic
    if (last !== undefined && last.topic === name) return last
    let t = this.topics.get(name)
    if (t === undefined) {
      this.topics.set(name, (t = new TopicQueues(name)))
      const kept = this.retired.get(name)
      if (kept !== undefined) {
        t.retired = kept
        this.retired.delete(name)
      }
    }
    return (this.lastTopic = t)
  }

  hasTopic(name: string): boolean {
    return this.topics.has(name)
  }

  /** How many topics have queues and partitioner state here. */
  get topicCount(): number {
    return this.topics.size
  }

  /**
   * Drops the queues and partitioner state of topics no send() used since `before` and that
   * hold no unfinished batch (Java's metadata.max.idle.ms), keeping only partitions' sequence
   * numbers; returns the names dropped. Sending to one again starts it afresh.
   */
  expireIdle(before: number): string[] {
    const out: string[] = []
    for (const [name, t] of this.topics) {
      if (t.lastUsed > before || t.unfinished > 0) continue
      let kept: (RetiredSequence | undefined)[] | undefined
      let busy = false
      for (const q of t.queues) {
        if (q === undefined) continue
        if (q.batches.length > 0 || q.inflight.length > 0 || q.unresolvedSequence >= 0) busy = true
        if (q.producerId >= 0n) (kept ??= [])[q.partition] = { producerId: q.producerId, producerEpoch: q.producerEpoch, nextSequence: q.nextSequence, lastAckedSequence: q.lastAckedSequence }
      }
      if (busy) continue
      // Partitions this incarnation never touched keep what the previous one left.
      if (t.retired !== undefined) {
        for (let i = 0; i < t.retired.length; i++) if (t.retired[i] !== undefined && t.queues[i] === undefined) (kept ??= [])[i] = t.retired[i]
      }
      this.topics.delete(name)
      if (this.lastTopic === t) this.lastTopic = undefined
      if (kept !== undefined) this.retired.set(name, kept)
      out.push(name)
    }
    return out
  }

  hasRoom(size: number): boolean {
    return this.used + size <= this.bufferMemory
  }

  /**
   * Picks the uniform sticky partition for a record of `size` bytes: the current one while the
   * batch its run is filling is open and has room; once that batch closed (full, or taken by
   * the sender) or the record would need a new one, another partition (KIP-480's onNewBatch).
   * The caller records the batch the record went into as the run's batch.
   */
  stickyPartition(t: TopicQueues, size: number): number {
    if (t.sticky < 0) {
      t.sticky = nextStickyPartition(t, -1)
      t.stickyBatch = undefined
      return t.sticky
    }
    const run = t.stickyBatch
    if (run !== undefined && (run.state !== BatchState.Open || !run.hasRoomFor(size, this.batchBytes, t.ratio.value))) {
      t.sticky = nextStickyPartition(t, t.sticky)
      t.stickyBatch = undefined
    }
    return t.sticky
  }

  /** Appends a record to its partition's open batch, opening one when needed; returns that batch. */
  append(t: TopicQueues, partition: number, record: RecordParts, stamp: number, size: number, owner: Delivery, slot: number, now: number): ProducerBatch {
    const q = t.queue(partition)
    let batch = q.open
    const ratio = t.ratio.value
    if (batch !== undefined && !batch.hasRoomFor(size, this.batchBytes, ratio)) {
      this.close(q)
      batch = undefined
    }
    if (batch === undefined) {
      batch = new ProducerBatch(q, now)
      // Written before the batch is queued: a record the writer refuses leaves no empty batch.
      batch.add(record, stamp, size, owner, slot)
      q.open = batch
      q.batches.push(batch)
      this.incomplete.add(batch)
      t.unfinished++
      if (q.batches.length === 1) this.pending.add(q)
      this.onBatch()
    } else {
      batch.add(record, stamp, size, owner, slot)
    }
    this.used += size
    if (batch.isFull(this.batchBytes, ratio)) {
      this.close(q)
      this.onBatch()
    }
    return batch
  }

  /** Closes the queue's open batch: it takes no more records and is ready to send. */
  close(q: PartitionQueue): void {
    const b = q.open
    if (b === undefined) return
    q.open = undefined
    b.state = BatchState.Ready
  }

  /**
   * Puts a batch back for another attempt, ahead of the batches never sent: for idempotent
   * batches in sequence order among those holding sequences (Java's insertInSequenceOrder), so
   * retries go out in the order the broker expects; otherwise behind the batches already
   * waiting for a retry, which failed first and so were sent first (Java puts each at the very
   * front, reversing them).
   */
  reenqueue(q: PartitionQueue, batch: ProducerBatch, bySequence: boolean): void {
    batch.state = BatchState.Retrying
    const list = q.batches
    let i = 0
    if (bySequence) {
      while (i < list.length && list[i]!.baseSequence >= 0 && list[i]!.baseSequence < batch.baseSequence) i++
    } else {
      while (i < list.length && list[i]!.state === BatchState.Retrying) i++
    }
    if (i === 0) list.unshift(batch)
    else list.splice(i, 0, batch)
    if (list.length === 1) this.pending.add(q)
  }

  /**
   * Puts the parts of a split batch where it was, at the front of its queue (in sequence order
   * among batches being retried), handing its memory and flush() waiters on to them.
   */
  replaceWithParts(batch: ProducerBatch, parts: ProducerBatch[]): void {
    const q = batch.queue
    this.incomplete.delete(batch)
    batch.state = BatchState.Failed
    for (const p of parts) this.incomplete.add(p)
    q.owner.unfinished += parts.length - 1
    const waiters = batch.flushWaiters
    if (waiters !== undefined) {
      for (const w of waiters) w.remaining += parts.length - 1
      for (const p of parts) p.flushWaiters = waiters.slice()
    }
    for (const p of parts) this.reenqueue(q, p, p.baseSequence >= 0)
    batch.release()
  }

  /** A batch reached a final state: frees its memory and tells flush() waiters. */
  done(batch: ProducerBatch): void {
    if (!this.incomplete.delete(batch)) return
    batch.queue.owner.unfinished--
    this.used -= batch.bytes
    if (this.waitingForRoom) this.onRoom?.()
    const waiters = batch.flushWaiters
    if (waiters !== undefined) for (const w of waiters) if (--w.remaining === 0) w.resolve()
    batch.release()
  }

  /** Makes `waiter` wait for every batch not finished right now; returns how many that is. */
  watch(waiter: FlushWaiter): number {
    let n = 0
    for (const b of this.incomplete) {
      ;(b.flushWaiters ??= []).push(waiter)
      n++
    }
    return n
  }
}
