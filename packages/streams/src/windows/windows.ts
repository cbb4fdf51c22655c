/**
 * Window specifications and windowed keys, as Kafka Streams' kstream.{TimeWindows,
 * SlidingWindows, SessionWindows, JoinWindows, Window, Windowed}: same factories, same
 * validation messages, same window arithmetic (start inclusive; TimeWindow end exclusive,
 * sliding and session windows inclusive at both ends).
 */

function checkMs(ms: number, what: string): number {
  if (!Number.isSafeInteger(ms)) throw new TypeError(`${what} must be an integer number of milliseconds (got ${ms})`)
  return ms
}

function checkGrace(ms: number, message = 'Grace period must not be negative.'): number {
  checkMs(ms, 'grace')
  if (ms < 0) throw new RangeError(message)
  return ms
}

/** A window: [start, end) for time windows, [start, end] for sliding and session windows. */
export class Window {
  constructor(readonly start: number, readonly end: number) {
    if (start < 0) throw new RangeError('Window startMs time cannot be negative.')
    if (end < start) throw new RangeError('Window endMs time cannot be smaller than window startMs time.')
  }

  equals(other: Window): boolean {
    return other.start === this.start && other.end === this.end
  }

  toString(): string {
    return `Window{startMs=${this.start}, endMs=${this.end}}`
  }
}

/** A key and the window it aggregates (Java's Windowed): `key@start/end` when printed, as Java. */
export class Windowed<K> {
  constructor(readonly key: K, readonly window: Window) {}

  toString(): string {
    return `[${String(this.key)}@${this.window.start}/${this.window.end}]`
  }
}

/** Tumbling (advance = size) and hopping (advance < size) windows, Java's TimeWindows. */
export class TimeWindows {
  readonly kind = 'time'
  private constructor(readonly sizeMs: number, readonly advanceMs: number, readonly graceMs: number) {}

  private static checkSize(sizeMs: number): number {
    checkMs(sizeMs, 'size')
    if (sizeMs <= 0) throw new RangeError('Window size (sizeMs) must be larger than zero.')
    return sizeMs
  }

  static ofSizeWithNoGrace(sizeMs: number): TimeWindows {
    return new TimeWindows(TimeWindows.checkSize(sizeMs), sizeMs, 0)
  }

  static ofSizeAndGrace(sizeMs: number, graceMs: number): TimeWindows {
    return new TimeWindows(TimeWindows.checkSize(sizeMs), sizeMs, checkGrace(graceMs))
  }

  advanceBy(advanceMs: number): TimeWindows {
    checkMs(advanceMs, 'advance')
    if (advanceMs <= 0 || advanceMs > this.sizeMs) {
      throw new RangeError(`Window advancement interval should be more than zero and less than window duration which is ${this.sizeMs} ms, but given advancement interval is: ${advanceMs} ms`)
    }
    return new TimeWindows(this.sizeMs, advanceMs, this.graceMs)
  }

  size(): number {
    return this.sizeMs
  }

  gracePeriodMs(): number {
    return this.graceMs
  }

  /** Every window containing `timestamp`, by ascending start (Java's windowsFor). */
  windowsFor(timestamp: number): Window[] {
    let start = Math.floor(Math.max(0, timestamp - this.sizeMs + this.advanceMs) / this.advanceMs) * this.advanceMs
    const out: Window[] = []
    for (; start <= timestamp; start += this.advanceMs) out.push(new Window(start, start + this.sizeMs))
    return out
  }

  toString(): string {
    return `TimeWindows{graceMs=${this.graceMs}, maintainDurationMs=${this.sizeMs + this.graceMs}, sizeMs=${this.sizeMs}, advanceMs=${this.advanceMs}}`
  }
}

/** Windows of a fixed time difference aligned to the records themselves (Java's SlidingWindows, KIP-450). */
export class SlidingWindows {
  readonly kind = 'sliding'
  private constructor(readonly timeDifferenceMs: number, readonly graceMs: number) {}

  private static check(diff: number): number {
    checkMs(diff, 'time difference')
    if (diff < 0) throw new RangeError('Window time difference must not be negative.')
    return diff
  }

  static ofTimeDifferenceWithNoGrace(timeDifferenceMs: number): SlidingWindows {
    return new SlidingWindows(SlidingWindows.check(timeDifferenceMs), 0)
  }

  static ofTimeDifferenceAndGrace(timeDifferenceMs: number, graceMs: number): SlidingWindows {
    return new SlidingWindows(SlidingWindows.check(timeDifferenceMs), checkGrace(graceMs, 'Window grace period must not be negative.'))
  }

  gracePeriodMs(): number {
    return this.graceMs
  }
}

/** Activity sessions separated by an inactivity gap; overlapping sessions merge (Java's SessionWindows). */
export class SessionWindows {
  readonly kind = 'session'
  private constructor(readonly gapMs: number, readonly graceMs: number) {}

  private static check(gap: number): number {
    checkMs(gap, 'inactivity gap')
    if (gap <= 0) throw new RangeError('Gap time cannot be zero or negative.')
    return gap
  }

  static ofInactivityGapWithNoGrace(inactivityGapMs: number): SessionWindows {
    return new SessionWindows(SessionWindows.check(inactivityGapMs), 0)
  }

  static ofInactivityGapAndGrace(inactivityGapMs: number, graceMs: number): SessionWindows {
    return new SessionWindows(SessionWindows.check(inactivityGapMs), checkGrace(graceMs))
  }

  inactivityGap(): number {
    return this.gapMs
  }

  gracePeriodMs(): number {
    return this.graceMs
  }
}

/**
 * How far apart two records may be to join (Java's JoinWindows): a left record at t joins right
 * records in [t - before, t + after]. The ofTimeDifference* factories turn on the fix of
 * KIP-633 / KAFKA-10847: left and outer joins emit a non-joined record only once its window
 * has closed, never eagerly.
 */
export class JoinWindows {
  private constructor(readonly beforeMs: number, readonly afterMs: number, readonly graceMs: number) {
    if (beforeMs + afterMs < 0) throw new RangeError('Window interval (ie, beforeMs+afterMs) must not be negative.')
  }

  static ofTimeDifferenceWithNoGrace(timeDifferenceMs: number): JoinWindows {
    checkMs(timeDifferenceMs, 'time difference')
    return new JoinWindows(timeDifferenceMs, timeDifferenceMs, 0)
  }

  static ofTimeDifferenceAndGrace(timeDifferenceMs: number, graceMs: number): JoinWindows {
    checkMs(timeDifferenceMs, 'time difference')
    return new JoinWindows(timeDifferenceMs, timeDifferenceMs, checkGrace(graceMs))
  }

  before(timeDifferenceMs: number): JoinWindows {
    return new JoinWindows(checkMs(timeDifferenceMs, 'before'), this.afterMs, this.graceMs)
  }

  after(timeDifferenceMs: number): JoinWindows {
    return new JoinWindows(this.beforeMs, checkMs(timeDifferenceMs, 'after'), this.graceMs)
  }

  size(): number {
    return this.beforeMs + this.afterMs
  }

  gracePeriodMs(): number {
    return this.graceMs
  }
}
