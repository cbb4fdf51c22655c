const MB = 1024 * 1024

function rate(n: number, seconds: number, digits = 1): string {
  return (seconds > 0 ? n / seconds : 0).toFixed(digits)
}

/**
 * A live status line on stderr (records/s, MB/s, totals), redrawn in place every 250 ms.
 * Only on a TTY and without --quiet: piped or redirected output stays clean.
 */
export class Progress {
  records = 0
  bytes = 0
  private readonly started = performance.now()
  private timer: NodeJS.Timeout | undefined
  private drawn = false

  constructor(
    private readonly stream: NodeJS.WritableStream & { isTTY?: boolean; columns?: number },
    private readonly verb: string,
    private readonly enabled: boolean,
  ) {
    if (enabled) {
      this.timer = setInterval(() => this.draw(), 250)
      this.timer.unref()
    }
  }

  add(records: number, bytes: number): void {
    this.records += records
    this.bytes += bytes
  }

  line(): string {
    const s = (performance.now() - this.started) / 1000
    return `${this.verb} ${this.records} records, ${(this.bytes / MB).toFixed(2)} MB in ${s.toFixed(1)} s: ${rate(this.records, s)} records/s, ${rate(this.bytes / MB, s, 2)} MB/s`
  }

  private draw(): void {
    const width = this.stream.columns ?? 120
    this.stream.write(`\r\x1b[K${this.line().slice(0, width - 1)}`)
    this.drawn = true
  }

  /** Stops redrawing; leaves the final totals on their own line (TTY only). */
  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer)
    this.timer = undefined
    if (this.enabled) {
      this.draw()
      if (this.drawn) this.stream.write('\n')
    }
  }
}
