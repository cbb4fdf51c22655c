/** What retention looks at in a segment. */
export interface RetentionSegment {
  readonly baseOffset: number
  readonly nextOffset: number
  readonly size: number
  readonly maxTimestamp: number
  readonly lastModified: number
}

export interface RetentionPolicy {
  /** -1: keep forever. */
  retentionMs: number
  /** -1: no size bound. */
  retentionBytes: number
}

export interface RetentionDecision {
  /** How many of the oldest segments go (always a prefix, so the log stays contiguous). */
  count: number
  reason?: 'log-start-offset' | 'retention-ms' | 'retention-bytes'
}

/**
 * Kafka's three deletion rules, each over a prefix of the segments:
 * segments wholly below the log start offset (DeleteRecords), segments whose
 * newest timestamp is older than retention.ms (the file's modification time
 * when batches carry no timestamps), and the oldest segments while the log
 * stays at or above retention.bytes without them. An empty last segment is
 * never counted: it is where the next append goes. Time and size never take
 * a segment holding offsets at or past `stableOffset` (the last stable
 * offset): Kafka bounds them by the high watermark, and a segment with the
 * start of an open transaction stays so the transaction can still be read
 * whole once it commits (KIP-98). DeleteRecords (the log start offset) is
 * bounded by the high watermark alone, as in Kafka.
 */
export function segmentsToDelete(
  segments: readonly RetentionSegment[],
  policy: RetentionPolicy,
  now: number,
  logStartOffset: number,
  stableOffset = Infinity,
): RetentionDecision {
  const n = segments.length
  const deletable = (i: number): boolean => !(i === n - 1 && segments[i]!.size === 0)
  const expirable = (i: number): boolean => deletable(i) && segments[i]!.nextOffset <= stableOffset

  // Below the log start means the next segment starts at or below it (Kafka's rule): a segment
  // the cleaner emptied keeps its place, and its base offset stays the log start.
  const end = (i: number): number => (i + 1 < n ? segments[i + 1]!.baseOffset : segments[i]!.nextOffset)
  let byStart = 0
  while (byStart < n && deletable(byStart) && end(byStart) <= logStartOffset) byStart++

  let byTime = 0
  if (policy.retentionMs >= 0) {
    while (byTime < n && expirable(byTime)) {
      const s = segments[byTime]!
      const newest = s.maxTimestamp >= 0 ? s.maxTimestamp : s.lastModified
      if (now - newest <= policy.retentionMs) break
      byTime++
    }
  }

  let bySize = 0
  if (policy.retentionBytes >= 0) {
    let total = 0
    for (const s of segments) total += s.size
    let excess = total - policy.retentionBytes
    while (bySize < n && expirable(bySize) && excess - segments[bySize]!.size >= 0) {
      excess -= segments[bySize]!.size
      bySize++
    }
  }

  const count = Math.max(byStart, byTime, bySize)
  if (count === 0) return { count }
  const reason = count === byStart ? 'log-start-offset' : count === byTime ? 'retention-ms' : 'retention-bytes'
  return { count, reason }
}
