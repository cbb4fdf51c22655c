/**
 * A wake-up flag for async loops: wait() resolves at the next notify() (or at once if one
 * happened since the last wait), so a notification between a check and the wait is not lost.
 */
export class Signal {
  private pending = false
  private waiters: (() => void)[] = []

  notify(): void {
    if (this.waiters.length === 0) {
      this.pending = true
      return
    }
    const w = this.waiters
    this.waiters = []
    for (const f of w) f()
  }

  /** Resolves at the next notify(), or after timeoutMs when given. */
  wait(timeoutMs?: number): Promise<void> {
    if (this.pending) {
      this.pending = false
      return Promise.resolve()
    }
    return new Promise<void>((resolve) => {
      if (timeoutMs === undefined) {
        this.waiters.push(resolve)
        return
      }
      const done = (): void => {
        clearTimeout(timer)
        resolve()
      }
      const timer = setTimeout(() => {
        const i = this.waiters.indexOf(done)
        if (i >= 0) this.waiters.splice(i, 1)
        resolve()
      }, timeoutMs)
      this.waiters.push(done)
    })
  }
}
