import { isRetriable, sleep, type Cluster } from '@tidelog/client'
import {
  ErrorCodes,
  Heartbeat,
  JoinGroup,
  LeaveGroup,
  ProtocolError,
  SyncGroup,
  TidelogError,
  decodeConsumerProtocolAssignment,
  decodeConsumerProtocolSubscription,
  encodeConsumerProtocolAssignment,
  encodeConsumerProtocolSubscription,
  type JoinGroupResponse,
  type SyncGroupRequestAssignment,
} from '@tidelog/protocol'
import { GroupMembershipError } from '../errors.js'
import type { ResolvedConsumerOptions } from '../options.js'
import { Signal } from '../signal.js'
import { sortPartitions, tpKey, type GroupGeneration, type TopicPartition } from '../types.js'
import { generationFromUserData, rebalanceProtocolOf, withholdTransfers, type Assignor, type GroupMember, type RebalanceProtocol } from './assignors/index.js'
import type { CoordinatorLink } from './coordinator-link.js'
import { Membership, type MemberState } from './state.js'

/** What the consumer does for the group protocol; every call changing the assignment is awaited. */
export interface CoordinatorHooks {
  /** The topics this member subscribes to now. */
  topics(): string[]
  /** The partitions this member owns now. */
  owned(): TopicPartition[]
  /** Stop delivering them, run the listener, commit their processed offsets, drop them. */
  revoke(partitions: TopicPartition[], generation: GroupGeneration): Promise<void>
  /** The membership is gone: drop them without committing. */
  lose(partitions: TopicPartition[], generation: GroupGeneration): Promise<void>
  assign(partitions: TopicPartition[], generation: GroupGeneration): Promise<void>
  /** Partition counts of existing topics among `topics` (for the leader's assignment). */
  partitionCounts(topics: string[]): Promise<Map<string, number>>
  /** How long the application has held a delivered message (0 while it waits for one). */
  pollIdleMs(): number
  /** The member was refused for good; the consumer stops and reports it. */
  onFatal(error: Error): void
  onStateChange?(from: MemberState, to: MemberState): void
  onJoined?(info: GroupGeneration & { leaderId: string; isLeader: boolean }): void
}

/** JoinGroup / SyncGroup / Heartbeat errors that end the member for good (Java raises them). */
const FATAL = new Set<number>([
  ErrorCodes.FENCED_INSTANCE_ID,
  ErrorCodes.GROUP_MAX_SIZE_REACHED,
  ErrorCodes.INCONSISTENT_GROUP_PROTOCOL,
  ErrorCodes.INVALID_SESSION_TIMEOUT,
  ErrorCodes.INVALID_GROUP_ID,
  ErrorCodes.GROUP_AUTHORIZATION_FAILED,
  ErrorCodes.UNSUPPORTED_VERSION,
])

const SUBSCRIPTION_VERSION = 3

class Restart extends Error {}

/**
 * A member of a classic consumer group (Java's ConsumerCoordinator on AbstractCoordinator). The
 * join loop runs while a rejoin is due: it prepares (eager: revoke everything; cooperative:
 * revoke only unsubscribed topics; after a lost generation: partitions are lost), sends
 * JoinGroup (again at once after MEMBER_ID_REQUIRED, KIP-394), lets the leader run the agreed
 * assignor, sends SyncGroup and applies the assignment (cooperative: revokes what moved and
 * rejoins for the second phase, KIP-429). Heartbeats run on their own timer from JoinGroup's
 * answer until the member leaves, whatever the application is doing; the same timer enforces
 * maxPollIntervalMs by leaving the group when a message is held too long.
 */
export class ConsumerCoordinator {
  readonly membership = new Membership()
  readonly protocol: RebalanceProtocol
  private readonly wakeup = new Signal()
  private heartbeatTimer: NodeJS.Timeout | undefined
  private heartbeatInFlight = false
  private lastHeartbeatOk = 0
  private awaitingPoll = false
  private joinInFlight = false
  /** Bumped by leave(): a join round that started before is abandoned. */
  private round = 0
  private closed = false
  private running: Promise<void> | undefined
  /** Partition counts the last assignment was based on: a change means a rebalance is due. */
  private snapshot = new Map<string, number>()

  constructor(
    private readonly cluster: Cluster,
    private readonly link: CoordinatorLink,
    private readonly options: ResolvedConsumerOptions,
    private readonly assignors: readonly Assignor[],
    private readonly hooks: CoordinatorHooks,
  ) {
    this.protocol = rebalanceProtocolOf(assignors)
    this.membership.onTransition = (from, to) => {
      this.cluster.logger.debug({ groupId: link.groupId, from, to, generationId: this.membership.generationId }, 'group member state')
      hooks.onStateChange?.(from, to)
    }
  }

  get groupId(): string {
    return this.link.groupId
  }

  get isStatic(): boolean {
    return this.options.groupInstanceId !== null
  }

  /** Starts the join loop and the heartbeat timer. */
  start(): void {
    if (this.running !== undefined || this.closed) return
    this.running = this.run()
    this.scheduleHeartbeat()
  }

  requestRejoin(reason: string): void {
    if (this.membership.isTerminal) return
    this.membership.requestRejoin(reason)
    this.wakeup.notify()
  }

  /** The application asked for a message: a rejoin held back by a poll timeout may go on. */
  polled(): void {
    if (this.awaitingPoll) {
      this.awaitingPoll = false
      this.wakeup.notify()
    }
  }

  /** The partition counts of every topic the last assignment covered, to compare with fresh metadata. */
  get assignedTopicCounts(): ReadonlyMap<string, number> {
    return this.snapshot
  }

  // --- the join loop -----------------------------------------------------------------------

  private async run(): Promise<void> {
    let failures = 0
    while (!this.closed && !this.membership.isTerminal) {
      if (this.membership.rejoinReason === undefined || this.awaitingPoll) {
        await this.wakeup.wait()
        continue
      }
      try {
        await this.joinRound()
        failures = 0
      } catch (err) {
        if (this.closed) return
        if (err instanceof Restart) continue
        if (!isRetriable(err)) {
          this.fail(err as Error)
          return
        }
        this.membership.requestRejoin('retrying after an error')
        this.cluster.logger.warn({ err, groupId: this.groupId }, 'joining the group failed, retrying')
        await sleep(this.cluster.retryBackoff.delay(failures++))
      }
    }
  }

  private async joinRound(): Promise<void> {
    const m = this.membership
    const reason = m.rejoinReason ?? 'rejoin'
    // A leave (poll timeout, close) while this round waits makes whatever it waited for moot.
    const round = this.round
    const check = (): void => {
      if (this.closed || this.round !== round) throw new Restart()
    }
    await this.link.find()
    check()
    await this.prepare()
    check()
    m.rejoinReason = undefined
    const join = await this.joinGroup(reason, check)
    check()
    m.generationId = join.generationId
    m.memberId = join.memberId
    m.protocolName = join.protocolName
    m.leaderId = join.leader
    m.transition('syncing')
    this.lastHeartbeatOk = performance.now()
    const isLeader = join.leader === join.memberId
    this.hooks.onJoined?.({ ...m.snapshot(), leaderId: join.leader, isLeader })
    const assignments = isLeader && join.skipAssignment !== true ? await this.performAssignment(join) : []
    check()
    const bytes = await this.syncGroup(assignments, check)
    check()
    const decoded = bytes.length === 0 ? undefined : decodeConsumerProtocolAssignment(bytes)
    const assignment = decoded === undefined ? [] : flatten(decoded.assignedPartitions)
    m.transition('stable')
    this.assignors.find((a) => a.name === m.protocolName)?.onAssignment?.({ partitions: assignment, userData: decoded?.userData ?? null, generationId: m.generationId })
    await this.complete(assignment)
  }

  /** Before JoinGroup: give up what this rebalance protocol says must be given up first. */
  private async prepare(): Promise<void> {
    const m = this.membership
    const owned = this.hooks.owned()
    if (owned.length > 0) {
      if (!m.hasGeneration) {
        await this.hooks.lose(owned, m.snapshot())
      } else if (this.protocol === 'eager') {
        await this.hooks.revoke(owned, m.snapshot())
      } else {
        const topics = new Set(this.hooks.topics())
        const gone = owned.filter((tp) => !topics.has(tp.topic))
        if (gone.length > 0) await this.hooks.revoke(gone, m.snapshot())
      }
    }
  }

  private subscriptionFor(assignor: Assignor): Buffer {
    const m = this.membership
    const topics = [...new Set(this.hooks.topics())].sort()
    const owned = sortPartitions(this.hooks.owned().slice())
    const byTopic = new Map<string, number[]>()
    for (const tp of owned) {
      let l = byTopic.get(tp.topic)
      if (l === undefined) byTopic.set(tp.topic, (l = []))
      l.push(tp.partition)
    }
    return encodeConsumerProtocolSubscription(
      {
        topics,
        userData: assignor.subscriptionUserData?.({ topics, generationId: m.generationId, ownedPartitions: owned }) ?? null,
        ownedPartitions: [...byTopic].map(([topic, partitions]) => ({ topic, partitions })),
        generationId: m.generationId,
        rackId: this.options.clientRack,
      },
      SUBSCRIPTION_VERSION,
    )
  }

  private async joinGroup(reason: string, check: () => void): Promise<JoinGroupResponse> {
    const m = this.membership
    const o = this.options
    const protocols = this.assignors.map((a) => ({ name: a.name, metadata: this.subscriptionFor(a) }))
    for (let attempt = 0; ; attempt++) {
      check()
      m.transition('joining')
      let res: JoinGroupResponse
      this.joinInFlight = true
      try {
        res = await this.link.request(
          JoinGroup,
          (v) => ({
            groupId: this.groupId,
            sessionTimeoutMs: o.sessionTimeoutMs,
            rebalanceTimeoutMs: o.rebalanceTimeoutMs,
            memberId: m.memberId,
            groupInstanceId: v >= 5 ? o.groupInstanceId : undefined,
            protocolType: 'consumer',
            protocols,
            reason: v >= 8 ? reason : undefined,
          }),
          // The coordinator holds JoinGroup until the group forms, up to the rebalance timeout.
          { timeoutMs: Math.max(o.requestTimeoutMs, o.rebalanceTimeoutMs + 5000), minVersion: this.isStatic ? 5 : undefined },
        )
      } catch (err) {
        this.joinInFlight = false
        check()
        m.transition('unjoined')
        throw err
      }
      this.joinInFlight = false
      check()
      const code = res.errorCode
      if (code === ErrorCodes.NONE) {
        if (res.protocolType != null && res.protocolType !== 'consumer') {
          throw new GroupMembershipError(`group ${this.groupId} uses protocol type ${res.protocolType}, not consumer`)
        }
        return res
      }
      m.transition('unjoined')
      const error = new ProtocolError(code, { api: 'JoinGroup', apiKey: JoinGroup.apiKey, groupId: this.groupId })
      switch (code) {
        case ErrorCodes.MEMBER_ID_REQUIRED:
          // KIP-394: the coordinator assigned an id; join again with it, at once.
          m.memberId = res.memberId
          continue
        case ErrorCodes.UNKNOWN_MEMBER_ID:
          m.resetGeneration(false)
          continue
        case ErrorCodes.ILLEGAL_GENERATION:
          m.resetGeneration(true)
          continue
        case ErrorCodes.COORDINATOR_NOT_AVAILABLE:
        case ErrorCodes.NOT_COORDINATOR:
          this.link.markUnknown()
          await this.link.find()
          check()
          continue
        default:
          if (FATAL.has(code)) throw this.fatalError(error)
          if (!error.retriable && code !== ErrorCodes.REBALANCE_IN_PROGRESS) throw this.fatalError(error)
          await sleep(this.cluster.retryBackoff.delay(attempt))
          check()
          continue
      }
    }
  }

  private fatalError(error: ProtocolError): Error {
    return new GroupMembershipError(`the coordinator refused member ${this.membership.memberId || '(new)'} of group ${this.groupId}: ${error.message}`, { cause: error })
  }

  /** The leader's part: decode every member's subscription and run the agreed assignor. */
  private async performAssignment(join: JoinGroupResponse): Promise<SyncGroupRequestAssignment[]> {
    const assignor = this.assignors.find((a) => a.name === join.protocolName)
    if (assignor === undefined) throw new GroupMembershipError(`the group chose assignor ${join.protocolName}, which this member did not offer`)
    const members: GroupMember[] = []
    const versions = new Map<string, number>()
    for (const jm of join.members) {
      try {
        const sub = decodeConsumerProtocolSubscription(jm.metadata)
        versions.set(jm.memberId, sub.version)
        const generationId = sub.version >= 2 ? (sub.generationId ?? -1) : assignor.name === 'cooperative-sticky' ? generationFromUserData(sub.userData) : -1
        members.push({
          memberId: jm.memberId,
          groupInstanceId: jm.groupInstanceId ?? null,
          topics: sub.topics,
          userData: sub.userData,
          ownedPartitions: flatten(sub.ownedPartitions ?? []),
          generationId,
          rackId: sub.rackId ?? null,
        })
      } catch (err) {
        // A member whose subscription cannot be read gets nothing rather than stalling the group.
        this.cluster.logger.warn({ err, memberId: jm.memberId, groupId: this.groupId }, 'unreadable member subscription')
        members.push({ memberId: jm.memberId, groupInstanceId: jm.groupInstanceId ?? null, topics: [], userData: null, ownedPartitions: [], generationId: -1, rackId: null })
      }
    }
    const topics = [...new Set(members.flatMap((mm) => mm.topics))].sort()
    const counts = await this.hooks.partitionCounts(topics)
    const withData = await assignor.assignWithUserData?.({ members, partitionCounts: counts })
    const result = withData?.partitions ?? assignor.assign({ members, partitionCounts: counts })
    // Whatever the assignor, a cooperative group never hands over a partition its owner still holds.
    if (this.protocol === 'cooperative') {
      const withheld = withholdTransfers(members, result)
      if (withheld.length > 0) this.cluster.logger.debug({ groupId: this.groupId, withheld: withheld.length }, 'partitions withheld until their owners revoke them')
    }
    this.snapshot = counts
    return members.map((mm) => {
      const byTopic = new Map<string, number[]>()
      for (const tp of sortPartitions((result.get(mm.memberId) ?? []).slice())) {
        let l = byTopic.get(tp.topic)
        if (l === undefined) byTopic.set(tp.topic, (l = []))
        l.push(tp.partition)
      }
      // Every assignment version has the same layout; answer in the member's own version.
      const version = Math.max(0, Math.min(SUBSCRIPTION_VERSION, versions.get(mm.memberId) ?? 0))
      return {
        memberId: mm.memberId,
        assignment: encodeConsumerProtocolAssignment({ assignedPartitions: [...byTopic].map(([topic, partitions]) => ({ topic, partitions })), userData: withData?.userData.get(mm.memberId) ?? null }, version),
      }
    })
  }

  private async syncGroup(assignments: SyncGroupRequestAssignment[], check: () => void): Promise<Uint8Array> {
    const m = this.membership
    // The generation JoinGroup gave, fixed now: whatever happens meanwhile, SyncGroup is for it.
    const { generationId, memberId, protocolName } = m
    let res
    try {
      res = await this.link.request(SyncGroup, (v) => ({
        groupId: this.groupId,
        generationId,
        memberId,
        groupInstanceId: v >= 3 ? this.options.groupInstanceId : undefined,
        protocolType: v >= 5 ? 'consumer' : undefined,
        protocolName: v >= 5 ? protocolName : undefined,
        assignments,
      }))
    } catch (err) {
      check()
      m.transition('unjoined')
      throw err
    }
    check()
    const code = res.errorCode
    if (code === ErrorCodes.NONE) return res.assignment
    m.transition('unjoined')
    const error = new ProtocolError(code, { api: 'SyncGroup', apiKey: SyncGroup.apiKey, groupId: this.groupId })
    if (FATAL.has(code)) throw this.fatalError(error)
    if (code === ErrorCodes.UNKNOWN_MEMBER_ID) m.resetGeneration(false)
    else if (code === ErrorCodes.ILLEGAL_GENERATION) m.resetGeneration(true)
    else if (this.link.moved(code)) {
      // The member stays in the group; the next JoinGroup goes to the new coordinator.
    } else if (code !== ErrorCodes.REBALANCE_IN_PROGRESS && !error.retriable) throw this.fatalError(error)
    m.requestRejoin(`SyncGroup answered ${error.type}`)
    throw new Restart()
  }

  /** After SyncGroup: apply the assignment (eager: all of it; cooperative: the difference). */
  private async complete(assigned: TopicPartition[]): Promise<void> {
    const m = this.membership
    const generation = m.snapshot()
    const topics = new Set(this.hooks.topics())
    const mine = assigned.filter((tp) => topics.has(tp.topic))
    if (mine.length !== assigned.length) {
      // Java's rule too: an assignment for topics we no longer want means a stale subscription.
      m.requestRejoin('assignment does not match the subscription')
    }
    const ownedNow = this.hooks.owned()
    const now = new Set(mine.map((tp) => tpKey(tp.topic, tp.partition)))
    const had = new Set(ownedNow.map((tp) => tpKey(tp.topic, tp.partition)))
    const revoked = ownedNow.filter((tp) => !now.has(tpKey(tp.topic, tp.partition)))
    const added = mine.filter((tp) => !had.has(tpKey(tp.topic, tp.partition)))
    if (revoked.length > 0) await this.hooks.revoke(revoked, generation)
    await this.hooks.assign(added, generation)
    // KIP-429's second phase: the partitions given up go to their new owners next round.
    if (revoked.length > 0 && this.protocol === 'cooperative') m.requestRejoin('partitions revoked, completing the cooperative rebalance')
    if (this.snapshot.size === 0 || m.leaderId !== m.memberId) this.snapshot = await this.hooks.partitionCounts([...topics]).catch(() => new Map())
  }

  // --- heartbeats --------------------------------------------------------------------------

  private scheduleHeartbeat(): void {
    if (this.closed) return
    this.heartbeatTimer = setTimeout(() => {
      this.heartbeatTimer = undefined
      void this.beat().finally(() => this.scheduleHeartbeat())
    }, this.options.heartbeatIntervalMs)
  }

  private async beat(): Promise<void> {
    const m = this.membership
    if (this.closed || !m.heartbeats || !m.hasGeneration || this.heartbeatInFlight) return
    // Java's max.poll.interval.ms: a member whose application stopped taking messages leaves,
    // so that its partitions go to members that make progress.
    if (this.hooks.pollIdleMs() > this.options.maxPollIntervalMs) {
      this.cluster.logger.warn({ groupId: this.groupId, maxPollIntervalMs: this.options.maxPollIntervalMs }, 'a message was held longer than maxPollIntervalMs: leaving the group')
      const generation = m.snapshot()
      await this.leave('consumer poll timeout has expired')
      this.awaitingPoll = true
      m.requestRejoin('rejoining after a poll timeout')
      // Its partitions belong to others as soon as the group rebalances: stop delivering them.
      const owned = this.hooks.owned()
      if (owned.length > 0) await this.hooks.lose(owned, generation)
      return
    }
    if (this.lastHeartbeatOk > 0 && performance.now() - this.lastHeartbeatOk > this.options.sessionTimeoutMs) {
      // No heartbeat got through for a whole session: whatever coordinator we knew is suspect.
      this.link.markUnknown()
    }
    this.heartbeatInFlight = true
    const generationId = m.generationId
    try {
      const res = await this.link.request(Heartbeat, (v) => ({
        groupId: this.groupId,
        generationId,
        memberId: m.memberId,
        groupInstanceId: v >= 3 ? this.options.groupInstanceId : undefined,
      }))
      if (m.generationId !== generationId) return
      this.handleHeartbeat(res.errorCode)
    } catch (err) {
      this.cluster.logger.warn({ err, groupId: this.groupId }, 'heartbeat failed')
      if (!isRetriable(err)) this.fail(err as Error)
    } finally {
      this.heartbeatInFlight = false
    }
  }

  private handleHeartbeat(code: number): void {
    const m = this.membership
    switch (code) {
      case ErrorCodes.NONE:
        this.lastHeartbeatOk = performance.now()
        return
      case ErrorCodes.REBALANCE_IN_PROGRESS:
        this.lastHeartbeatOk = performance.now()
        if (m.state === 'stable') this.requestRejoin('the group is rebalancing')
        return
      case ErrorCodes.ILLEGAL_GENERATION:
        m.resetGeneration(true)
        this.requestRejoin('the generation is over')
        return
      case ErrorCodes.UNKNOWN_MEMBER_ID:
        m.resetGeneration(false)
        this.requestRejoin('the coordinator does not know this member')
        return
      case ErrorCodes.NOT_COORDINATOR:
      case ErrorCodes.COORDINATOR_NOT_AVAILABLE:
        this.link.markUnknown()
        return
      default: {
        const error = new ProtocolError(code, { api: 'Heartbeat', apiKey: Heartbeat.apiKey, groupId: this.groupId })
        if (FATAL.has(code) || !error.retriable) this.fail(this.fatalError(error))
      }
    }
  }

  // --- leaving -----------------------------------------------------------------------------

  /**
   * Sends LeaveGroup (dynamic members only, as Java: a static member's id outlives the process,
   * KIP-345) and forgets the generation. Errors are logged (warn): the session timeout removes
   * the member anyway, later.
   */
  async leave(reason: string, force = false, timeoutMs = this.options.requestTimeoutMs): Promise<void> {
    const m = this.membership
    this.round++
    if (m.isTerminal) return
    const send = (!this.isStatic || force) && m.memberId !== '' && (m.state === 'syncing' || m.state === 'stable' || m.state === 'joining')
    if (send) {
      const memberId = m.memberId
      try {
        m.transition('leaving')
        // A JoinGroup parked at the coordinator would hold back anything behind it on its connection.
        const res = await this.link.request(
          LeaveGroup,
          (v) =>
            v >= 3
              ? { groupId: this.groupId, members: [{ memberId, groupInstanceId: this.options.groupInstanceId, reason: v >= 5 ? reason : undefined }] }
              : { groupId: this.groupId, memberId },
          { lane: this.joinInFlight ? 'group-leave' : 'group', timeoutMs },
        )
        // v3+ answers per member; the top-level code covers the request (and is all v0-v2 have).
        const code = res.errorCode !== ErrorCodes.NONE ? res.errorCode : (res.members?.find((x) => x.errorCode !== ErrorCodes.NONE)?.errorCode ?? ErrorCodes.NONE)
        if (code !== ErrorCodes.NONE) throw new ProtocolError(code, { api: 'LeaveGroup', apiKey: LeaveGroup.apiKey, groupId: this.groupId })
      } catch (err) {
        this.cluster.logger.warn({ err, groupId: this.groupId, memberId }, 'LeaveGroup failed: the group rebalances once the session times out')
      }
    }
    m.resetGeneration(false)
    if (m.state !== 'unjoined' && !m.isTerminal) m.transition('unjoined')
  }

  private fail(error: Error): void {
    if (this.membership.isTerminal) return
    this.cluster.logger.error({ err: error, groupId: this.groupId }, 'group membership failed')
    this.membership.transition('failed')
    this.stopTimers()
    this.wakeup.notify()
    this.hooks.onFatal(error instanceof TidelogError ? error : new GroupMembershipError(error.message, { cause: error }))
  }

  private stopTimers(): void {
    if (this.heartbeatTimer !== undefined) clearTimeout(this.heartbeatTimer)
    this.heartbeatTimer = undefined
  }

  /**
   * Stops the join loop and the heartbeats. The membership stays as it is, so that the caller
   * can still revoke (committing with the generation) and leave; dispose() ends it.
   */
  stop(): void {
    this.closed = true
    this.round++
    this.stopTimers()
    this.wakeup.notify()
  }

  dispose(): void {
    this.stop()
    if (!this.membership.isTerminal) this.membership.transition('closed')
  }
}

function flatten(list: readonly { topic: string; partitions: number[] }[]): TopicPartition[] {
  const out: TopicPartition[] = []
  for (const t of list) for (const p of t.partitions) out.push({ topic: t.topic, partition: p })
  return out
}
