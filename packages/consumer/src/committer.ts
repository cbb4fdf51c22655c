import { Deadline, isRetriable, sleep, type Cluster } from '@tidelog/client'
import {
  ErrorCodes,
  OffsetCommit,
  OffsetFetch,
  ProtocolError,
  type OffsetCommitRequest,
  type OffsetCommitResponse,
  type OffsetFetchRequest,
} from '@tidelog/protocol'
import { CommitFailedError, GroupMembershipError } from './errors.js'
import type { CoordinatorLink } from './group/coordinator-link.js'
import { tpKey, type TopicPartition, type TopicPartitionOffset } from './types.js'

/** Who commits: a group member's generation, or (-1, '') for a consumer outside any generation. */
export interface CommitIdentity {
  generationId: number
  memberId: string
  groupInstanceId: string | null
}

export interface CommittedOffset {
  offset: bigint
  leaderEpoch: number
  metadata: string | null
}

export interface CommitterHooks {
  /** The identity to commit with, or an error saying why there is none right now. */
  identity(): CommitIdentity | Error
  /** ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID / REBALANCE_IN_PROGRESS from a commit sent as `who`. */
  onGenerationError(code: number, who: CommitIdentity): void
}

const RETRY_COMMIT = new Set<number>([
  ErrorCodes.COORDINATOR_LOAD_IN_PROGRESS,
  ErrorCodes.COORDINATOR_NOT_AVAILABLE,
  ErrorCodes.NOT_COORDINATOR,
  ErrorCodes.REQUEST_TIMED_OUT,
  ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION,
])

const GENERATION_OVER = new Set<number>([ErrorCodes.ILLEGAL_GENERATION, ErrorCodes.UNKNOWN_MEMBER_ID, ErrorCodes.FENCED_INSTANCE_ID])

function byTopic<T extends TopicPartition>(list: readonly T[]): Map<string, T[]> {
  const out = new Map<string, T[]>()
  for (const x of list) {
    let l = out.get(x.topic)
    if (l === undefined) out.set(x.topic, (l = []))
    l.push(x)
  }
  return out
}

/**
 * OffsetCommit and OffsetFetch against the group coordinator. Commits run one at a time, in
 * call order, so that a later commit is never overtaken by an earlier one (whose offsets may
 * be lower) on a retry. Retriable failures are retried until the deadline; a commit the group
 * fences (its generation is over) fails with CommitFailedError.
 */
export class Committer {
  private chain: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly cluster: Cluster,
    private readonly link: CoordinatorLink,
    private readonly hooks: CommitterHooks,
  ) {}

  /**
   * Commits offsets (each the next offset to consume). `offsets` may be a function, evaluated
   * when the commit's turn comes, so that queued commits read the freshest positions.
   */
  commit(offsets: TopicPartitionOffset[] | (() => TopicPartitionOffset[]), timeoutMs: number): Promise<TopicPartitionOffset[]> {
    const run = this.chain.then(() => {
      const list = typeof offsets === 'function' ? offsets() : offsets
      return list.length === 0 ? list : this.send(list, timeoutMs)
    })
    this.chain = run.catch(() => undefined)
    return run
  }

  private async send(offsets: TopicPartitionOffset[], timeoutMs: number): Promise<TopicPartitionOffset[]> {
    const deadline = new Deadline(timeoutMs)
    let pending = offsets
    for (let attempt = 0; ; attempt++) {
      const who = this.hooks.identity()
      if (who instanceof Error) throw who
      let retry: TopicPartitionOffset[] = []
      let lastError: Error | undefined
      let res: OffsetCommitResponse | undefined
      try {
        res = await this.link.request(OffsetCommit, (v) => this.commitBody(v, who, pending), {
          // Static members need v7 (group instance id); Java refuses to commit without it too.
          minVersion: who.groupInstanceId !== null ? 7 : undefined,
          // No attempt outlives the commit's deadline (close() and rebalances bound it).
          timeoutMs: Math.max(1, Math.min(this.cluster.requestTimeoutMs, deadline.remaining())),
        })
      } catch (err) {
        if (!isRetriable(err)) throw err
        retry = pending
        lastError = err as Error
      }
      if (res !== undefined) {
        const failed = new Map<string, number>()
        for (const t of res.topics) for (const p of t.partitions) if (p.errorCode !== ErrorCodes.NONE) failed.set(tpKey(t.name, p.partitionIndex), p.errorCode)
        for (const o of pending) {
          const code = failed.get(tpKey(o.topic, o.partition))
          if (code === undefined) continue
          const error = new ProtocolError(code, { api: 'OffsetCommit', apiKey: OffsetCommit.apiKey, topic: o.topic, partition: o.partition, groupId: this.link.groupId })
          if (GENERATION_OVER.has(code)) {
            this.hooks.onGenerationError(code, who)
            if (code === ErrorCodes.FENCED_INSTANCE_ID) throw new GroupMembershipError(`group instance id ${who.groupInstanceId} was fenced by another member`, { cause: error })
            throw new CommitFailedError(error.type, code, { cause: error })
          }
          if (code === ErrorCodes.REBALANCE_IN_PROGRESS) {
            this.hooks.onGenerationError(code, who)
            throw error
          }
          if (this.link.moved(code) || RETRY_COMMIT.has(code)) {
            retry.push(o)
            lastError = error
            continue
          }
          throw error
        }
      }
      if (retry.length === 0) return offsets
      const delay = this.cluster.retryBackoff.delay(attempt)
      if (deadline.passedAfter(delay)) throw lastError!
      pending = retry
      await sleep(delay)
    }
  }

  private commitBody(version: number, who: CommitIdentity, offsets: TopicPartitionOffset[]): OffsetCommitRequest {
    const req: OffsetCommitRequest = {
      groupId: this.link.groupId,
      generationIdOrMemberEpoch: who.generationId,
      memberId: who.memberId,
      topics: [...byTopic(offsets)].map(([name, list]) => ({
        name,
        partitions: list.map((o) => ({
          partitionIndex: o.partition,
          committedOffset: o.offset,
          committedLeaderEpoch: o.leaderEpoch ?? -1,
          // Java commits an empty string when there is no metadata.
          committedMetadata: o.metadata ?? '',
        })),
      })),
    }
    if (version >= 7) req.groupInstanceId = who.groupInstanceId
    if (version >= 2 && version <= 4) req.retentionTimeMs = -1n
    return req
  }

  /** The group's committed offsets for the partitions (offset -1n: none committed). */
  async fetch(partitions: readonly TopicPartition[], timeoutMs: number): Promise<Map<string, CommittedOffset>> {
    const deadline = new Deadline(timeoutMs)
    const topics = [...byTopic(partitions)].map(([name, list]) => ({ name, partitionIndexes: list.map((p) => p.partition) }))
    for (let attempt = 0; ; attempt++) {
      let error: Error
      try {
        const res = await this.link.request(
          OffsetFetch,
          (v): OffsetFetchRequest =>
            v >= 8
              ? { groups: [{ groupId: this.link.groupId, topics }], requireStable: true }
              : { groupId: this.link.groupId, topics, ...(v >= 7 ? { requireStable: true } : {}) },
          // v1 is the first that reads offsets the group keeps in Kafka rather than ZooKeeper.
          { minVersion: 1 },
        )
        const group = res.groups?.[0]
        const code = group !== undefined ? group.errorCode : (res.errorCode ?? 0)
        const list = group !== undefined ? group.topics : (res.topics ?? [])
        if (code !== ErrorCodes.NONE) throw new ProtocolError(code, { api: 'OffsetFetch', apiKey: OffsetFetch.apiKey, groupId: this.link.groupId })
        const out = new Map<string, CommittedOffset>()
        let unstable: ProtocolError | undefined
        for (const t of list) {
          for (const p of t.partitions) {
            if (p.errorCode === ErrorCodes.UNSTABLE_OFFSET_COMMIT) {
              // A transaction holds pending offsets for it (KIP-447): ask again shortly.
              unstable = new ProtocolError(p.errorCode, { api: 'OffsetFetch', topic: t.name, partition: p.partitionIndex, groupId: this.link.groupId })
              continue
            }
            if (p.errorCode !== ErrorCodes.NONE && p.errorCode !== ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION) {
              throw new ProtocolError(p.errorCode, { api: 'OffsetFetch', apiKey: OffsetFetch.apiKey, topic: t.name, partition: p.partitionIndex, groupId: this.link.groupId })
            }
            out.set(tpKey(t.name, p.partitionIndex), {
              offset: p.errorCode === ErrorCodes.NONE ? p.committedOffset : -1n,
              leaderEpoch: p.committedLeaderEpoch ?? -1,
              metadata: p.metadata,
            })
          }
        }
        if (unstable === undefined) return out
        error = unstable
      } catch (err) {
        if (err instanceof ProtocolError) this.link.moved(err.code)
        if (!isRetriable(err)) throw err
        error = err as Error
      }
      const delay = this.cluster.retryBackoff.delay(attempt)
      if (deadline.passedAfter(delay)) throw error
      await sleep(delay)
    }
  }
}
