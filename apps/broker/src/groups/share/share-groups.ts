import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { readFileSync } from 'node:fs'
import { ErrorCodes } from '@tidelog/protocol'
import type { BrokerContext } from '../../context.js'
import { DurableFile } from '../../durable-file.js'
import { SharePartition, type StoredSharePartition } from './share-partition.js'
import { shareGroupSettings, type ShareGroupSettings } from './settings.js'

export const SHARE_STATE_FILE = 'share-groups.json'

export interface ShareMember {
  memberId: string
  /** The epoch this member was last told (KIP-848 rules): it moves to the group's assignment epoch at the member's next heartbeat. */
  memberEpoch: number
  previousMemberEpoch: number
  rackId: string | null
  clientId: string
  clientHost: string
  subscribedTopicNames: string[]
  lastHeartbeat: number
  /** topicId -> partitions */
  assignment: Map<string, number[]>
}

export interface ShareGroup {
  groupId: string
  groupEpoch: number
  assignmentEpoch: number
  members: Map<string, ShareMember>
  /** `${topicId}:${partition}` -> state */
  partitions: Map<string, SharePartition>
}

interface ShareSession {
  epoch: number
  partitions: Set<string>
}

export class ShareError extends Error {
  constructor(readonly code: number, message: string) {
    super(message)
  }
}

/** KIP-932: share session epochs count 1, 2, ... and wrap from INT32_MAX back to 1 (0 opens, -1 closes). */
export function nextSessionEpoch(e: number): number {
  return e >= 0x7fffffff ? 1 : e + 1
}

/**
 * The share groups of one broker: membership (ShareGroupHeartbeat), share sessions
 * (ShareFetch / ShareAcknowledge epochs) and the share-partition states, which are kept in
 * share-groups.json in the data dir (Kafka keeps them in __share_group_state), written by a
 * DurableFile off the request path.
 */
export class ShareGroups {
  readonly groups = new Map<string, ShareGroup>()
  private readonly sessions = new Map<string, ShareSession>()
  private readonly file: DurableFile
  private waiters = new Set<() => void>()

  constructor(readonly broker: BrokerContext) {
    const path = join(broker.config.dataDir, SHARE_STATE_FILE)
    this.file = new DurableFile(path, SHARE_STATE_FILE, broker.logs, () => JSON.stringify(this.toStored()))
    this.load(path)
  }

  get settings(): ShareGroupSettings {
    return shareGroupSettings(this.broker)
  }

  private load(path: string): void {
    let text: string
    try {
      text = readFileSync(path, 'utf8')
    } catch {
      return
    }
    const stored = JSON.parse(text) as { groups: Record<string, Record<string, StoredSharePartition>> }
    for (const [groupId, parts] of Object.entries(stored.groups)) {
      const g = this.group(groupId)
      for (const [key, sp] of Object.entries(parts)) g.partitions.set(key, SharePartition.restore(sp, () => this.limits()))
    }
  }

  private toStored() {
    const groups: Record<string, Record<string, StoredSharePartition>> = {}
    for (const g of this.groups.values()) {
      const parts: Record<string, StoredSharePartition> = {}
      for (const [k, p] of g.partitions) if (p.startOffset >= 0) parts[k] = p.toStored()
      groups[g.groupId] = parts
    }
    return { version: 1, groups }
  }

  /** Resolves once the state changed so far is on disk. */
  persisted(): Promise<void> {
    return this.file.persisted()
  }

  changed(): void {
    void this.file.save().catch(() => {})
    const ws = this.waiters
    this.waiters = new Set()
    for (const w of ws) w()
  }

  /** Resolves after `ms` or on the next change to any share-partition (a release or an expiry makes records available). */
  waitForChange(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        this.waiters.delete(done)
        resolve()
      }
      // Unref'd: a long poll in progress never keeps a closing broker's process alive.
      const timer = setTimeout(done, ms)
      timer.unref()
      this.waiters.add(done)
    })
  }

  private limits() {
    const s = this.settings
    return { lockDurationMs: s.recordLockDurationMs, deliveryCountLimit: s.deliveryCountLimit, maxInFlight: s.partitionMaxRecordLocks }
  }

  group(groupId: string): ShareGroup {
    let g = this.groups.get(groupId)
    if (g === undefined) {
      g = { groupId, groupEpoch: 0, assignmentEpoch: 0, members: new Map(), partitions: new Map() }
      this.groups.set(groupId, g)
    }
    return g
  }

  partition(g: ShareGroup, topicId: string, partition: number): SharePartition {
    const key = `${topicId}:${partition}`
    let p = g.partitions.get(key)
    if (p === undefined) g.partitions.set(key, (p = new SharePartition(() => this.limits())))
    return p
  }

  /** Kafka's share group states: Empty without members, Stable with. */
  state(g: ShareGroup): 'Empty' | 'Stable' {
    return g.members.size === 0 ? 'Empty' : 'Stable'
  }

  /** Members silent for longer than the session timeout are removed and their records released. */
  expireMembers(g: ShareGroup, now: number): void {
    const timeout = this.settings.sessionTimeoutMs
    for (const m of [...g.members.values()]) if (now - m.lastHeartbeat > timeout) this.removeMember(g, m.memberId, now)
  }

  removeMember(g: ShareGroup, memberId: string, now: number): void {
    if (!g.members.delete(memberId)) return
    this.sessions.delete(`${g.groupId}\u0000${memberId}`)
    let changed = false
    for (const p of g.partitions.values()) changed = p.releaseMember(memberId, now) || changed
    g.groupEpoch++
    this.assign(g)
    if (changed) this.changed()
  }

  /**
   * Kafka's SimpleAssignor for one broker: every subscribed partition goes to at least one
   * subscribed member and members are spread evenly over them, so with more members than
   * partitions several members share a partition (share groups allow that).
   */
  assign(g: ShareGroup): void {
    const byTopic = new Map<string, { topicId: string; partitions: number }>()
    for (const m of g.members.values()) {
      for (const name of m.subscribedTopicNames) {
        const t = this.broker.topics.get(name)
        if (t !== undefined) byTopic.set(name, { topicId: t.topicId, partitions: t.logs.length })
      }
    }
    const members = [...g.members.values()].sort((a, b) => (a.memberId < b.memberId ? -1 : 1))
    for (const m of members) m.assignment = new Map()
    for (const [name, t] of byTopic) {
      const subs = members.filter((m) => m.subscribedTopicNames.includes(name))
      if (subs.length === 0) continue
      const n = Math.max(subs.length, t.partitions)
      for (let i = 0; i < n; i++) {
        const m = subs[i % subs.length]!
        const p = i % t.partitions
        const list = m.assignment.get(t.topicId) ?? []
        if (!list.includes(p)) list.push(p)
        m.assignment.set(t.topicId, list)
      }
    }
    g.assignmentEpoch = g.groupEpoch
  }

  /** ShareGroupHeartbeat v1 (the member id is chosen by the client, KIP-1082). */
  heartbeat(req: { groupId: string; memberId: string; memberEpoch: number; rackId: string | null; subscribedTopicNames: string[] | null }, client: { clientId: string; host: string }, now: number): { member?: ShareMember; left?: true; sendAssignment: boolean } {
    if (req.groupId === '') throw new ShareError(ErrorCodes.INVALID_REQUEST, 'GroupId can\'t be empty.')
    if (req.memberId === '') throw new ShareError(ErrorCodes.INVALID_REQUEST, 'MemberId can\'t be empty.')
    const g = this.group(req.groupId)
    this.expireMembers(g, now)
    if (req.memberEpoch === -1) {
      if (!g.members.has(req.memberId)) throw new ShareError(ErrorCodes.UNKNOWN_MEMBER_ID, `member ${req.memberId} is not in group ${req.groupId}`)
      this.removeMember(g, req.memberId, now)
      return { left: true, sendAssignment: false }
    }
    let m = g.members.get(req.memberId)
    if (req.memberEpoch === 0) {
      if (req.subscribedTopicNames === null || req.subscribedTopicNames.length === 0) {
        throw new ShareError(ErrorCodes.INVALID_REQUEST, 'SubscribedTopicNames must be set in first request.')
      }
      if (m === undefined && g.members.size >= this.settings.maxSize) {
        throw new ShareError(ErrorCodes.GROUP_MAX_SIZE_REACHED, `share group ${req.groupId} has reached its maximum size`)
      }
    } else {
      if (m === undefined) throw new ShareError(ErrorCodes.UNKNOWN_MEMBER_ID, `member ${req.memberId} is not in group ${req.groupId}`)
      // The previous epoch is accepted too: the response that carried the current one may have been lost.
      if (req.memberEpoch !== m.memberEpoch && req.memberEpoch !== m.previousMemberEpoch) {
        throw new ShareError(ErrorCodes.FENCED_MEMBER_EPOCH, `member epoch ${req.memberEpoch} is not the current ${m.memberEpoch}`)
      }
    }
    let rebalance = false
    if (m === undefined) {
      m = { memberId: req.memberId, memberEpoch: 0, previousMemberEpoch: -1, rackId: req.rackId, clientId: client.clientId, clientHost: client.host, subscribedTopicNames: [], lastHeartbeat: now, assignment: new Map() }
      g.members.set(m.memberId, m)
      rebalance = true
    }
    m.lastHeartbeat = now
    if (req.subscribedTopicNames !== null) {
      const names = [...new Set(req.subscribedTopicNames)].sort()
      if (names.join('\u0000') !== m.subscribedTopicNames.join('\u0000')) {
        m.subscribedTopicNames = names
        rebalance = true
      }
    }
    // Topics created or grown since the last assignment also change it.
    if (!rebalance && this.assignmentStale(m)) rebalance = true
    if (rebalance) {
      g.groupEpoch++
      this.assign(g)
    }
    // Share groups have no revocation phase, so a member moves straight to the new assignment.
    if (m.memberEpoch !== g.assignmentEpoch) {
      m.previousMemberEpoch = m.memberEpoch
      m.memberEpoch = g.assignmentEpoch
    }
    return { member: m, sendAssignment: req.memberEpoch !== m.memberEpoch }
  }

  private assignmentStale(m: ShareMember): boolean {
    for (const name of m.subscribedTopicNames) {
      const t = this.broker.topics.get(name)
      if (t === undefined) continue
      if (!m.assignment.has(t.topicId)) return true
    }
    for (const topicId of m.assignment.keys()) if (this.broker.topics.getById(topicId) === undefined) return true
    return false
  }

  /**
   * Checks a ShareFetch / ShareAcknowledge session epoch (KIP-932): 0 opens a new session
   * (replacing the member's old one), -1 closes it after this request, any other value must
   * be the epoch the session expects next.
   */
  session(groupId: string, memberId: string, epoch: number, opening: boolean): ShareSession {
    const key = `${groupId}\u0000${memberId}`
    const g = this.groups.get(groupId)
    if (g === undefined || !g.members.has(memberId)) throw new ShareError(ErrorCodes.UNKNOWN_MEMBER_ID, `member ${memberId} is not in share group ${groupId}`)
    if (epoch === 0) {
      if (!opening) throw new ShareError(ErrorCodes.INVALID_SHARE_SESSION_EPOCH, 'ShareAcknowledge cannot open a share session (epoch 0)')
      const s: ShareSession = { epoch: 1, partitions: new Set() }
      this.sessions.set(key, s)
      return s
    }
    const s = this.sessions.get(key)
    if (s === undefined) throw new ShareError(ErrorCodes.SHARE_SESSION_NOT_FOUND, `no share session for member ${memberId}`)
    if (epoch === -1) {
      this.sessions.delete(key)
      return s
    }
    if (epoch !== s.epoch) throw new ShareError(ErrorCodes.INVALID_SHARE_SESSION_EPOCH, `share session epoch ${epoch}, expected ${s.epoch}`)
    s.epoch = nextSessionEpoch(s.epoch)
    return s
  }

  /** A fetch with epoch 0 opened the session at epoch 1 already; later ones advance it in session(). */
  deleteGroup(groupId: string): number {
    const g = this.groups.get(groupId)
    if (g === undefined) return ErrorCodes.GROUP_ID_NOT_FOUND
    if (g.members.size > 0) return ErrorCodes.NON_EMPTY_GROUP
    this.groups.delete(groupId)
    this.changed()
    return ErrorCodes.NONE
  }

  newMemberId(): string {
    return randomUUID()
  }
}

const instances = new WeakMap<BrokerContext, ShareGroups>()

/** The share groups of a broker, created (and loaded from its data dir) on first use. */
export function shareGroupsOf(broker: BrokerContext): ShareGroups {
  let s = instances.get(broker)
  if (s === undefined) instances.set(broker, (s = new ShareGroups(broker)))
  return s
}

/** ListGroups rows of the share groups (type "share", protocol type "share" as Kafka lists them), by the same case-insensitive filters. */
export function listShareGroups(broker: BrokerContext, states: readonly string[], types: readonly string[]) {
  const want = (filter: readonly string[], value: string) => filter.length === 0 || filter.some((f) => f.toLowerCase() === value.toLowerCase())
  if (!want(types, 'share')) return []
  const s = shareGroupsOf(broker)
  const now = Date.now()
  return [...s.groups.values()]
    .map((g) => {
      s.expireMembers(g, now)
      return { groupId: g.groupId, protocolType: 'share', groupState: s.state(g), groupType: 'share' }
    })
    .filter((g) => want(states, g.groupState))
}
