import type { Cancellable, Punctuator } from '../processor.js'

interface Schedule {
  node: string
  due: number
  interval: number
  punctuator: Punctuator
  cancelled: boolean
  seq: number
}

/**
 * Java's PunctuationQueue: each schedule fires once its time is due; when one or more intervals
 * were missed (no data for a while, a slow wall clock) it fires once and moves to the next
 * interval boundary after `now`, never several times in a row.
 */
export class PunctuationQueue {
  private readonly queue: Schedule[] = []
  private seq = 0

  schedule(node: string, first: number, interval: number, punctuator: Punctuator): Cancellable {
    if (!Number.isInteger(interval) || interval < 1) throw new RangeError(`The minimum supported scheduling interval is 1 millisecond (got ${interval})`)
    const s: Schedule = { node, due: first, interval, punctuator, cancelled: false, seq: this.seq++ }
    this.queue.push(s)
    return { cancel: () => { s.cancelled = true } }
  }

  /** Runs every due punctuator in (time, scheduling) order; returns whether any ran. */
  mayPunctuate(now: number, run: (node: string, timestamp: number, punctuator: Punctuator) => void): boolean {
    let punctuated = false
    for (;;) {
      this.queue.sort((a, b) => a.due - b.due || a.seq - b.seq)
      const top = this.queue[0]
      if (top === undefined || top.due > now) return punctuated
      this.queue.shift()
      if (!top.cancelled) {
        run(top.node, now, top.punctuator)
        if (!top.cancelled) {
          let next = top.due + top.interval
          if (now >= next) next = top.due + (Math.floor((now - top.due) / top.interval) + 1) * top.interval
          top.due = next
          top.seq = this.seq++
          this.queue.push(top)
        }
      }
      punctuated = true
    }
  }
}
