/**
 * The Prometheus text exposition format (version 0.0.4): one HELP and TYPE line
 * per family, then its samples. Label values are escaped as the format requires
 * (backslash, double quote, newline), so a topic or group name can never break a line.
 */

export type MetricType = 'counter' | 'gauge' | 'histogram'

export type Labels = Readonly<Record<string, string | number>>

export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
}

function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')
}

export function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN'
  if (v === Infinity) return '+Inf'
  if (v === -Infinity) return '-Inf'
  return String(v)
}

function formatLabels(labels: Labels | undefined, extra?: [string, string]): string {
  const parts: string[] = []
  if (labels !== undefined) for (const k of Object.keys(labels)) parts.push(`${k}="${escapeLabel(String(labels[k]))}"`)
  if (extra !== undefined) parts.push(`${extra[0]}="${escapeLabel(extra[1])}"`)
  return parts.length === 0 ? '' : `{${parts.join(',')}}`
}

/** Builds one scrape's text, family by family. */
export class ExpositionWriter {
  private readonly lines: string[] = []

  family(name: string, type: MetricType, help: string): this {
    this.lines.push(`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} ${type}`)
    return this
  }

  sample(name: string, value: number, labels?: Labels): this {
    this.lines.push(`${name}${formatLabels(labels)} ${formatValue(value)}`)
    return this
  }

  /** A histogram's cumulative buckets (le), _sum and _count; `counts` holds one per bound plus +Inf. */
  histogram(name: string, bounds: readonly number[], counts: readonly number[], sum: number, labels?: Labels): this {
    let cumulative = 0
    for (let i = 0; i <= bounds.length; i++) {
      cumulative += counts[i] ?? 0
      const le = i < bounds.length ? formatValue(bounds[i]!) : '+Inf'
      this.lines.push(`${name}_bucket${formatLabels(labels, ['le', le])} ${cumulative}`)
    }
    this.lines.push(`${name}_sum${formatLabels(labels)} ${formatValue(sum)}`, `${name}_count${formatLabels(labels)} ${cumulative}`)
    return this
  }

  text(): string {
    return this.lines.length === 0 ? '' : `${this.lines.join('\n')}\n`
  }
}

/** A fixed-bucket histogram: observe() is an index search and two additions, cheap on the request path. */
export class Histogram {
  readonly counts: number[]
  sum = 0

  constructor(readonly bounds: readonly number[]) {
    this.counts = new Array<number>(bounds.length + 1).fill(0)
  }

  observe(v: number): void {
    const b = this.bounds
    let i = 0
    while (i < b.length && v > b[i]!) i++
    this.counts[i]!++
    this.sum += v
  }

  get count(): number {
    let n = 0
    for (const c of this.counts) n += c
    return n
  }
}
