/**
 * One share-partition (KIP-932): the records of a topic partition a share group hands out.
 * Offsets below startOffset (Kafka's share-partition start offset, SPSO) are done; between it
 * and endOffset (SPEO) each record is in flight with a state, a delivery count and, while
 * ACQUIRED, the member holding it and the time its acquisition lock runs out. Offsets at or
 * past endOffset have never been acquired and count as AVAILABLE with delivery count 0.
 */

export type RecordState = 'AVAILABLE' | 'ACQUIRED' | 'ACKNOWLEDGED' | 'ARCHIVED'
export type RecordEvent = 'acquire' | 'accept' | 'release' | 'reject' | 'lockExpired' | 'archive'

/**
 * Every allowed transition of an in-flight record, as Kafka's SharePartition allows them.
 * release and lockExpired go back to AVAILABLE unless the delivery count has reached
 * group.share.delivery.count.limit, in which case the record is ARCHIVED instead (checked
 * in transition(), the one place a state changes).
 */
const TRANSITIONS: Readonly<Record<RecordState, Partial<Record<RecordEvent, RecordState>>>> = {
  AVAILABLE: { acquire: 'ACQUIRED', archive: 'ARCHIVED' },
  ACQUIRED: { accept: 'ACKNOWLEDGED', release: 'AVAILABLE', reject: 'ARCHIVED', lockExpired: 'AVAILABLE', archive: 'ARCHIVED' },
  ACKNOWLEDGED: {},
  ARCHIVED: {},
}

export interface InFlight {
  state: RecordState
  deliveryCount: number
  memberId: string | null
  lockExpiresAt: number
}

export interface SharePartitionLimits {
  lockDurationMs: number
  deliveryCountLimit: number
  maxInFlight: number
}

/** A record's state change that is not allowed (Kafka's INVALID_RECORD_STATE). */
export class InvalidRecordStateError extends Error {}

export interface StoredSharePartition {
  startOffset: number
  stateEpoch: number
  /** [offset, state, deliveryCount] of every in-flight record; ACQUIRED is stored as AVAILABLE (locks do not survive a restart). */
  inFlight: [number, RecordState, number][]
}

export class SharePartition {
  /** -1 until the first fetch sets it from share.auto.offset.reset. */
  startOffset = -1
  stateEpoch = 0
  readonly inFlight = new Map<number, InFlight>()

  constructor(private readonly limits: () => SharePartitionLimits) {}

  static restore(s: StoredSharePartition, limits: () => SharePartitionLimits): SharePartition {
    const p = new SharePartition(limits)
    p.startOffset = s.startOffset
    p.stateEpoch = s.stateEpoch + 1
    for (const [offset, state, deliveryCount] of s.inFlight) {
      // A lock held when the broker stopped is gone with its consumer session: the record is offered again.
      p.inFlight.set(offset, { state: state === 'ACQUIRED' ? 'AVAILABLE' : state, deliveryCount, memberId: null, lockExpiresAt: 0 })
    }
    return p
  }

  toStored(): StoredSharePartition {
    return {
      startOffset: this.startOffset,
      stateEpoch: this.stateEpoch,
      inFlight: [...this.inFlight].sort((a, b) => a[0] - b[0]).map(([o, r]) => [o, r.state, r.deliveryCount]),
    }
  }

  /** The highest offset + 1 ever acquired (Kafka's share-partition end offset). */
  get endOffset(): number {
    let end = this.startOffset
    for (const o of this.inFlight.keys()) if (o + 1 > end) end = o + 1
    return end
  }

  private transition(offset: number, r: InFlight, event: RecordEvent, memberId: string | null, now: number): void {
    let next = TRANSITIONS[r.state][event]
    if (next === undefined) throw new InvalidRecordStateError(`record ${offset} is ${r.state}, cannot ${event}`)
    if (next === 'ACQUIRED') {
      r.deliveryCount++
      r.memberId = memberId
      r.lockExpiresAt = now + this.limits().lockDurationMs
    } else {
      r.memberId = null
      r.lockExpiresAt = 0
      if (next === 'AVAILABLE' && r.deliveryCount >= this.limits().deliveryCountLimit) next = 'ARCHIVED'
    }
    r.state = next
  }

  /** Locks past their time go back to AVAILABLE (or ARCHIVED at the delivery limit). Returns whether any did. */
  expireLocks(now: number): boolean {
    let changed = false
    for (const [o, r] of this.inFlight) {
      if (r.state === 'ACQUIRED' && r.lockExpiresAt <= now) {
        this.transition(o, r, 'lockExpired', null, now)
        changed = true
      }
    }
    if (changed) this.advanceStart()
    return changed
  }

  /** The earliest time a held lock runs out, or undefined when none is held. */
  nextLockExpiry(): number | undefined {
    let next: number | undefined
    for (const r of this.inFlight.values()) if (r.state === 'ACQUIRED' && (next === undefined || r.lockExpiresAt < next)) next = r.lockExpiresAt
    return next
  }

  /**
   * Acquires for `memberId` up to `maxRecords` acquirable offsets among `offsets` (ascending,
   * the data records the log returned), within the in-flight limit. Returns the acquired
   * offsets with their delivery counts.
   */
  acquire(offsets: readonly number[], memberId: string, maxRecords: number, now: number): { offset: number; deliveryCount: number }[] {
    const out: { offset: number; deliveryCount: number }[] = []
    const { maxInFlight } = this.limits()
    for (const o of offsets) {
      if (out.length >= maxRecords) break
      if (o < this.startOffset) continue
      let r = this.inFlight.get(o)
      if (r === undefined) {
        if (this.inFlight.size >= maxInFlight) break
        r = { state: 'AVAILABLE', deliveryCount: 0, memberId: null, lockExpiresAt: 0 }
        this.inFlight.set(o, r)
      }
      if (r.state !== 'AVAILABLE') continue
      this.transition(o, r, 'acquire', memberId, now)
      out.push({ offset: o, deliveryCount: r.deliveryCount })
    }
    return out
  }

  /** Offsets in [from, to) that the log holds no data record at (control batches, compacted gaps) are done. */
  archiveGaps(from: number, to: number, dataOffsets: ReadonlySet<number>): void {
    for (let o = Math.max(from, this.startOffset); o < to; o++) {
      if (dataOffsets.has(o) || this.inFlight.has(o)) continue
      this.inFlight.set(o, { state: 'ARCHIVED', deliveryCount: 0, memberId: null, lockExpiresAt: 0 })
    }
    this.advanceStart()
  }

  /**
   * Applies one acknowledgement batch of `memberId`: type 0 is a gap (archived), 1 ACCEPT,
   * 2 RELEASE, 3 REJECT (KIP-932). Every offset must be ACQUIRED by that member, else the
   * whole batch is refused with InvalidRecordStateError and nothing changes.
   */
  acknowledge(first: number, last: number, types: readonly number[], memberId: string, now: number): void {
    const eventOf = (i: number): RecordEvent | 'gap' => {
      const t = types.length === 1 ? types[0]! : types[i]
      if (t === 0) return 'gap'
      if (t === 1) return 'accept'
      if (t === 2) return 'release'
      if (t === 3) return 'reject'
      throw new InvalidRecordStateError(`unknown acknowledge type ${String(t)}`)
    }
    if (last < first || (types.length !== 1 && types.length !== last - first + 1)) {
      throw new InvalidRecordStateError(`acknowledgement batch ${first}-${last} has ${types.length} types`)
    }
    for (let o = first; o <= last; o++) {
      const ev = eventOf(o - first)
      const r = this.inFlight.get(o)
      if (ev === 'gap') continue
      if (r === undefined || r.state !== 'ACQUIRED' || r.memberId !== memberId) {
        throw new InvalidRecordStateError(`record ${o} is not acquired by this member`)
      }
    }
    for (let o = first; o <= last; o++) {
      const ev = eventOf(o - first)
      const r = this.inFlight.get(o)
      if (ev === 'gap') {
        if (r === undefined) this.inFlight.set(o, { state: 'ARCHIVED', deliveryCount: 0, memberId: null, lockExpiresAt: 0 })
        else if (r.state === 'ACQUIRED' && r.memberId === memberId) this.transition(o, r, 'archive', null, now)
        continue
      }
      this.transition(o, r!, ev, memberId, now)
    }
    this.advanceStart()
  }

  /** A member that leaves or is fenced gives back every record it holds. */
  releaseMember(memberId: string, now: number): boolean {
    let changed = false
    for (const [o, r] of this.inFlight) {
      if (r.state === 'ACQUIRED' && r.memberId === memberId) {
        this.transition(o, r, 'release', null, now)
        changed = true
      }
    }
    if (changed) this.advanceStart()
    return changed
  }

  /** The start offset moves past every finished record at its front; finished records behind it are forgotten. */
  private advanceStart(): void {
    for (;;) {
      const r = this.inFlight.get(this.startOffset)
      if (r === undefined || (r.state !== 'ACKNOWLEDGED' && r.state !== 'ARCHIVED')) break
      this.inFlight.delete(this.startOffset)
      this.startOffset++
    }
  }

  /** The log start moved past records (retention, DeleteRecords): they can no longer be delivered. */
  truncateTo(logStartOffset: number): void {
    if (this.startOffset >= logStartOffset) return
    for (const o of this.inFlight.keys()) if (o < logStartOffset) this.inFlight.delete(o)
    this.startOffset = logStartOffset
    this.advanceStart()
  }
}
