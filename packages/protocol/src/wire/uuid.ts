import { EncodeError } from '../errors/base.js'

/**
 * Kafka prints a Uuid as 22 characters of URL-safe base64 without padding (the
 * form kafka-topics.sh shows for topic ids), so that is the form tidelog uses.
 */
export const ZERO_UUID = 'AAAAAAAAAAAAAAAAAAAAAA'

export function uuidToBytes(v: string): Buffer {
  const b = Buffer.from(v, 'base64url')
  if (b.length !== 16) throw new EncodeError(`uuid ${JSON.stringify(v)} is not 16 bytes of base64url`)
  return b
}

export function uuidFromBytes(b: Uint8Array, offset = 0): string {
  return Buffer.from(b.buffer, b.byteOffset + offset, 16).toString('base64url')
}

/** A random (version 4) uuid in Kafka's printed form, never the zero or the reserved "metadata" id. */
export function randomUuid(): string {
  for (;;) {
    const b = Buffer.from(crypto.getRandomValues(new Uint8Array(16)))
    b[6] = (b[6]! & 0x0f) | 0x40
    b[8] = (b[8]! & 0x3f) | 0x80
    const s = b.toString('base64url')
    // Kafka reserves the all-zero id and the one with only the low bit set.
    if (s !== ZERO_UUID && s !== 'AAAAAAAAAAAAAAAAAAAAAQ') return s
  }
}
