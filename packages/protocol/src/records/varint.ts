// Varint sizes and writers for the record encoder's hot loop: plain functions
// over a Uint8Array and a position, no objects.

/** Bytes of a zigzag varint of an int32. */
export function varintSize(v: number): number {
  let z = ((v << 1) ^ (v >> 31)) >>> 0
  let n = 1
  while (z > 0x7f) {
    n++
    z >>>= 7
  }
  return n
}

/** Bytes of a zigzag varlong of a safe integer. */
export function varlongSize(v: number): number {
  if (v >= -0x40000000 && v < 0x40000000) return varintSize(v)
  let z = v >= 0 ? v * 2 : -v * 2 - 1
  let n = 1
  while (z >= 128) {
    n++
    z = Math.floor(z / 128)
  }
  return n
}

export function writeVarint(b: Uint8Array, p: number, v: number): number {
  let z = ((v << 1) ^ (v >> 31)) >>> 0
  while (z > 0x7f) {
    b[p++] = (z & 0x7f) | 0x80
    z >>>= 7
  }
  b[p++] = z
  return p
}

export function writeVarlong(b: Uint8Array, p: number, v: number): number {
  if (v >= -0x40000000 && v < 0x40000000) return writeVarint(b, p, v)
  let z = v >= 0 ? v * 2 : -v * 2 - 1
  while (z >= 128) {
    b[p++] = (z % 128) | 0x80
    z = Math.floor(z / 128)
  }
  b[p++] = z
  return p
}
