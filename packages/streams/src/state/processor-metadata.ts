/**
 * Java's TopicPartitionMetadata (version 2) with its ProcessorMetadata: what a task commits with
 * each input offset, base64 of `[magic 2][8-byte partition time][int count][int keyLen, UTF-8 key,
 * 8-byte value]...`. Processors keep small facts in it that must survive a restart without a
 * store, such as the last window close time an emit-on-window-close aggregation emitted (KIP-825).
 */
const MAGIC = 2
/** Java's RecordQueue.UNKNOWN. */
const UNKNOWN = -1

export function encodeOffsetMetadata(partitionTime: number, metadata: ReadonlyMap<string, number>): string {
  const parts: Buffer[] = []
  const head = Buffer.alloc(9)
  head.writeInt8(MAGIC, 0)
  head.writeBigInt64BE(BigInt(partitionTime), 1)
  parts.push(head)
  if (metadata.size > 0) {
    const count = Buffer.alloc(4)
    count.writeInt32BE(metadata.size)
    parts.push(count)
    for (const [k, v] of metadata) {
      const key = Buffer.from(k, 'utf8')
      const entry = Buffer.alloc(4 + key.length + 8)
      entry.writeInt32BE(key.length, 0)
      key.copy(entry, 4)
      entry.writeBigInt64BE(BigInt(v), 4 + key.length)
      parts.push(entry)
    }
  }
  return Buffer.concat(parts).toString('base64')
}

/** As Java's decode: an empty, unknown or unreadable string gives no partition time and no metadata (never an error). */
export function decodeOffsetMetadata(s: string | null | undefined): { partitionTime: number; metadata: Map<string, number> } {
  const metadata = new Map<string, number>()
  if (!s) return { partitionTime: UNKNOWN, metadata }
  try {
    const b = Buffer.from(s, 'base64')
    const version = b.readInt8(0)
    if (version !== 1 && version !== MAGIC) return { partitionTime: UNKNOWN, metadata }
    const partitionTime = Number(b.readBigInt64BE(1))
    if (version === MAGIC && b.length > 9) {
      let at = 9
      const count = b.readInt32BE(at)
      at += 4
      for (let i = 0; i < count; i++) {
        const len = b.readInt32BE(at)
        const key = b.subarray(at + 4, at + 4 + len).toString('utf8')
        metadata.set(key, Number(b.readBigInt64BE(at + 4 + len)))
        at += 12 + len
      }
    }
    return { partitionTime, metadata }
  } catch {
    return { partitionTime: UNKNOWN, metadata: new Map() }
  }
}

/** Java's ProcessorMetadata.update: per key, the largest value any partition committed. */
export function mergeProcessorMetadata(into: Map<string, number>, other: ReadonlyMap<string, number>): void {
  for (const [k, v] of other) {
    const mine = into.get(k)
    if (mine === undefined || mine < v) into.set(k, v)
  }
}
