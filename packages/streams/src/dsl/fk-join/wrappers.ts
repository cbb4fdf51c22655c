import type { Serde } from '@tidelog/client'
import { StreamsException } from '../../errors.js'
import { deserializeSync, serializeSync } from '../../store.js'

/** What the right side does with a subscription (Java's SubscriptionWrapper.Instruction; the byte is on the wire). */
export const Instruction = {
  DELETE_KEY_NO_PROPAGATE: 0,
  DELETE_KEY_AND_PROPAGATE: 1,
  PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE: 2,
  PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE: 3,
} as const
export type Instruction = (typeof Instruction)[keyof typeof Instruction]

export type Hash = [bigint, bigint]

/** A left-table row subscribing to a foreign key (Java's SubscriptionWrapper, version 1). */
export interface Subscription<K> {
  hash: Hash | null
  instruction: Instruction
  primaryKey: K
  primaryPartition: number
}

/** The foreign value sent back to the subscriber, with the hash it was asked for (Java's SubscriptionResponseWrapper, version 0). */
export interface SubscriptionResponse<VO> {
  hash: Hash | null
  foreignValue: VO | null
  primaryPartition?: number
}

const SUBSCRIPTION_VERSION = 1
const RESPONSE_VERSION = 0

function writeHash(out: Buffer, at: number, h: Hash): void {
  out.writeBigUInt64BE(h[0], at)
  out.writeBigUInt64BE(h[1], at + 8)
}

const readHash = (b: Buffer, at: number): Hash => [b.readBigUInt64BE(at), b.readBigUInt64BE(at + 8)]

/** `{1 bit hash-is-null}{7 bits version}{instruction}{16-byte hash?}{primary key}{4-byte partition}`, as Java's SubscriptionWrapperSerde. */
export function subscriptionSerde<K>(primaryKeySerde: Serde<K>): Serde<Subscription<K>> {
  return {
    serialize: (s) => {
      const pk = serializeSync(primaryKeySerde, s.primaryKey, true)
      const hashLength = s.hash === null ? 0 : 16
      const out = Buffer.alloc(2 + hashLength + pk.length + 4)
      out[0] = s.hash === null ? SUBSCRIPTION_VERSION | 0x80 : SUBSCRIPTION_VERSION
      out[1] = s.instruction
      if (s.hash !== null) writeHash(out, 2, s.hash)
      pk.copy(out, 2 + hashLength)
      out.writeInt32BE(s.primaryPartition, out.length - 4)
      return out
    },
    deserialize: (b) => {
      const version = b[0]! & 0x7f
      if (version > SUBSCRIPTION_VERSION) throw new StreamsException(`SubscriptionWrapper is of an incompatible version (${version})`)
      const hashNull = (b[0]! & 0x80) !== 0
      const at = hashNull ? 2 : 18
      const end = version > 0 ? b.length - 4 : b.length
      return {
        hash: hashNull ? null : readHash(b, 2),
        instruction: b[1] as Instruction,
        primaryKey: deserializeSync(primaryKeySerde, b.subarray(at, end), true),
        primaryPartition: version > 0 ? b.readInt32BE(end) : -1,
      }
    },
  }
}

/** `{1 bit hash-is-null}{7 bits version}{16-byte hash?}{foreign value}`, as Java's SubscriptionResponseWrapperSerde. */
export function responseSerde<VO>(foreignValueSerde: Serde<VO>): Serde<SubscriptionResponse<VO>> {
  return {
    serialize: (r) => {
      const value = r.foreignValue === null ? Buffer.alloc(0) : serializeSync(foreignValueSerde, r.foreignValue, false)
      const hashLength = r.hash === null ? 0 : 16
      const out = Buffer.alloc(1 + hashLength + value.length)
      out[0] = r.hash === null ? RESPONSE_VERSION | 0x80 : RESPONSE_VERSION
      if (r.hash !== null) writeHash(out, 1, r.hash)
      value.copy(out, 1 + hashLength)
      return out
    },
    deserialize: (b) => {
      const version = b[0]! & 0x7f
      if (version !== RESPONSE_VERSION) throw new StreamsException(`SubscriptionResponseWrapper is of an incompatible version (${version})`)
      const hashNull = (b[0]! & 0x80) !== 0
      const at = hashNull ? 1 : 17
      return {
        hash: hashNull ? null : readHash(b, 1),
        foreignValue: b.length > at ? deserializeSync(foreignValueSerde, b.subarray(at), false) : null,
      }
    },
  }
}

/** Java's CombinedKeySchema: `{4-byte foreign key length}{foreign key}{primary key}`, so one foreign key's subscribers are a prefix range. */
export function combinedKey(foreignKey: Buffer, primaryKey: Buffer): Buffer {
  const out = Buffer.alloc(4 + foreignKey.length + primaryKey.length)
  out.writeInt32BE(foreignKey.length)
  foreignKey.copy(out, 4)
  primaryKey.copy(out, 4 + foreignKey.length)
  return out
}

export function combinedKeyPrefix(foreignKey: Buffer): Buffer {
  return combinedKey(foreignKey, Buffer.alloc(0))
}

export function splitCombinedKey(key: Buffer): { foreignKey: Buffer; primaryKey: Buffer } {
  const n = key.readInt32BE(0)
  return { foreignKey: key.subarray(4, 4 + n), primaryKey: key.subarray(4 + n) }
}
