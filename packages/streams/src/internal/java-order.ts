/**
 * Java's HashSet/HashMap iteration order for strings, which TopologyDescription exposes (the
 * order of stores and topics in `[...]`, and the order nodes are connected, which decides the
 * `-->` lists). Iteration walks buckets in index order, and within a bucket keeps insertion order
 * (Java 8+ resizes split buckets without reordering). Bucket = spread(String.hashCode) & (cap - 1).
 */
export function javaStringHash(s: string): number {
  let h = 0
  for (let i = 0; i < s.length; i++) h = (Math.imul(31, h) + s.charCodeAt(i)) | 0
  return h
}

function capacityFor(size: number): number {
  let cap = 16
  while (size > cap * 0.75) cap *= 2
  return cap
}

/** `items` in insertion order -> the order a java.util.HashSet of them iterates. */
export function javaHashOrder(items: readonly string[]): string[] {
  const unique = [...new Set(items)]
  const mask = capacityFor(unique.length) - 1
  const bucket = (s: string) => {
    const h = javaStringHash(s)
    return (h ^ (h >>> 16)) & mask
  }
  return unique.map((s, i) => ({ s, i, b: bucket(s) })).sort((a, b) => a.b - b.b || a.i - b.i).map((e) => e.s)
}

/** java.util.AbstractCollection.toString: `[a, b]`. */
export function javaSetString(items: readonly string[]): string {
  return `[${javaHashOrder(items).join(', ')}]`
}
