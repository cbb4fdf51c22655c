// Big-endian accessors on a plain Uint8Array, so the batch helpers work on any
// view (a Buffer, a slice of a mapped segment) without wrapping it first.

export function int32BE(b: Uint8Array, o: number): number {
  return (b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!
}

export function int16BE(b: Uint8Array, o: number): number {
  return ((b[o]! << 24) | (b[o + 1]! << 16)) >> 16
}

export function int64BE(b: Uint8Array, o: number): bigint {
  return (BigInt(int32BE(b, o)) << 32n) | BigInt(int32BE(b, o + 4) >>> 0)
}

export function putInt32BE(b: Uint8Array, o: number, v: number): void {
  b[o] = v >>> 24
  b[o + 1] = v >>> 16
  b[o + 2] = v >>> 8
  b[o + 3] = v
}

export function putInt16BE(b: Uint8Array, o: number, v: number): void {
  b[o] = v >>> 8
  b[o + 1] = v
}

export function putInt64BE(b: Uint8Array, o: number, v: bigint): void {
  putInt32BE(b, o, Number(BigInt.asIntN(32, v >> 32n)))
  putInt32BE(b, o + 4, Number(BigInt.asIntN(32, v)))
}
