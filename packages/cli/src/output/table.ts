/** Columns padded to their widest cell, as kafka-consumer-groups.sh prints them. */
export function table(header: readonly string[], rows: readonly (readonly (string | number | bigint)[])[]): string {
  const cells = [header, ...rows.map((r) => r.map(String))]
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)))
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n') + '\n'
}

/** JSON with bigints as numbers when safe, else strings. */
export function toJson(value: unknown, indent?: number): string {
  return JSON.stringify(
    value,
    (_k, v: unknown) => (typeof v === 'bigint' ? (v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString()) : v),
    indent,
  )
}
