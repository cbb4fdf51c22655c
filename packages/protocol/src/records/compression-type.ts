/** Compression codec ids as they appear in the low three bits of a batch's attributes. */
export const CompressionType = {
  None: 0,
  Gzip: 1,
  Snappy: 2,
  Lz4: 3,
  Zstd: 4,
} as const
export type CompressionType = (typeof CompressionType)[keyof typeof CompressionType]

const NAMES = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const
export type CompressionName = (typeof NAMES)[number]

/** 'gzip' -> 1 etc.; numbers pass through. Throws on an unknown name. */
export function compressionTypeOf(c: CompressionType | CompressionName): CompressionType {
  if (typeof c === 'number') return c
  const i = NAMES.indexOf(c)
  if (i < 0) throw new TypeError(`unknown compression ${String(c)}`)
  return i as CompressionType
}

export function compressionName(c: number): string {
  return NAMES[c] ?? `unknown(${c})`
}
