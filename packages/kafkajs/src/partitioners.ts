import { randomBytes } from 'node:crypto'
import { murmur2 } from '@tidelog/protocol'
import type { Message, PartitionMetadata } from './types.js'

export interface PartitionerArgs {
  topic: string
  partitionMetadata: PartitionMetadata[]
  message: Message
}

export type ICustomPartitioner = () => (args: PartitionerArgs) => number

const M = 0x5bd1e995

function byteAt(data: Buffer, i: number): number {
  return i < data.length ? data[i]! : 0
}

/**
 * kafkajs' original murmur2 (its LegacyPartitioner, the default before 2.0), reproduced for
 * placement-compatibility with data written by kafkajs 1.x. It is not Java's hash: its products
 * are IEEE doubles (not 32-bit multiplications, so they lose low bits past 2^53), and its block
 * loop runs ceil(length / 4) times, reading the tail bytes (and zeros past the end) as one more
 * block before the tail step mixes them in again. Both quirks are kept, byte for byte.
 */
export function legacyMurmur2(key: Buffer | string | number): number {
  const data = Buffer.isBuffer(key) ? key : Buffer.from(String(key))
  const length = data.length
  let h: number = 0x9747b28c ^ length
  for (let i = 0; i * 4 < length; i++) {
    const at = i * 4
    let k: number = byteAt(data, at) + (byteAt(data, at + 1) << 8) + (byteAt(data, at + 2) << 16) + (byteAt(data, at + 3) << 24)
    k = k * M
    k = k ^ (k >>> 24)
    k = k * M
    h = h * M
    h = h ^ k
  }
  const tail = length & ~3
  const rest = length % 4
  if (rest >= 3) h = h ^ (data[tail + 2]! << 16)
  if (rest >= 2) h = h ^ (data[tail + 1]! << 8)
  if (rest >= 1) {
    h = h ^ data[tail]!
    h = h * M
  }
  h = h ^ (h >>> 13)
  h = h * M
  return h ^ (h >>> 15)
}

function javaMurmur2(key: Buffer | string | number): number {
  return murmur2(Buffer.isBuffer(key) ? key : String(key))
}

const toPositive = (x: number): number => x & 0x7fffffff

/**
 * kafkajs' partitioner shape, shared by both built-ins: an explicit partition wins, a key is
 * hashed, and keyless messages go round-robin over the partitions that have a leader, from a
 * random start per topic.
 */
function partitionerFor(hash: (key: Buffer | string | number) => number): ICustomPartitioner {
  return () => {
    const counters = new Map<string, number>()
    return ({ topic, partitionMetadata, message }) => {
      if (message.partition !== null && message.partition !== undefined) return message.partition
      const count = partitionMetadata.length
      if (message.key !== null && message.key !== undefined) return toPositive(hash(message.key)) % count
      let counter = counters.get(topic) ?? randomBytes(4).readUInt32BE(0)
      counter++
      counters.set(topic, counter)
      const available = partitionMetadata.filter((p) => p.leader >= 0)
      if (available.length > 0) return available[toPositive(counter) % available.length]!.partitionId
      return toPositive(counter) % count
    }
  }
}

/** Java's murmur2 (the default since kafkajs 2.0): keyed records land where Java's producer puts them. */
export const DefaultPartitioner: ICustomPartitioner = partitionerFor(javaMurmur2)
/** kafkajs 1.x's default, for topics whose keyed data it placed. */
export const LegacyPartitioner: ICustomPartitioner = partitionerFor(legacyMurmur2)

export const Partitioners: {
  DefaultPartitioner: ICustomPartitioner
  LegacyPartitioner: ICustomPartitioner
  /** @deprecated kafkajs' old name of DefaultPartitioner. */
  JavaCompatiblePartitioner: ICustomPartitioner
} = { DefaultPartitioner, LegacyPartitioner, JavaCompatiblePartitioner: DefaultPartitioner }
