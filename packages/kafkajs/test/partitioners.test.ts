import { randomBytes } from 'node:crypto'
import kafkajs from 'kafkajs'
import { describe, expect, it } from 'vitest'
import { Partitioners, legacyMurmur2 } from '@tidelog/kafkajs'

const meta = (n: number) => Array.from({ length: n }, (_, i) => ({ partitionErrorCode: 0, partitionId: i, leader: 0, replicas: [0], isr: [0] }))

// Keys of every length 0..40 (so each tail length and the legacy hash's overrun block), ASCII,
// multi-byte UTF-8 and random bytes.
function keys(): (string | Buffer)[] {
  const out: (string | Buffer)[] = []
  for (let len = 0; len <= 40; len++) {
    out.push('k'.repeat(len), randomBytes(len), 'é€😀'.repeat(len).slice(0, len))
  }
  for (let i = 0; i < 2000; i++) out.push(`user-${i}`, randomBytes(1 + (i % 64)))
  return out
}

describe('Partitioners place keyed messages exactly where kafkajs 2.2.4 does', () => {
  it.each(['DefaultPartitioner', 'LegacyPartitioner'] as const)('%s, for 4,000+ keys and 1 to 100 partitions', (name) => {
    const theirs = kafkajs.Partitioners[name]()
    const ours = Partitioners[name]()
    let checked = 0
    for (const key of keys()) {
      for (const n of [1, 3, 7, 12, 100]) {
        const args = { topic: 't', partitionMetadata: meta(n), message: { key, value: null } }
        expect(ours(args), `${name} key ${JSON.stringify(key)} over ${n}`).toBe(theirs(args))
        checked++
      }
    }
    expect(checked).toBeGreaterThan(20_000)
  })

  it('the legacy hash is not Java murmur2 (kafkajs 1.x placement differs for most keys)', () => {
    const java = Partitioners.DefaultPartitioner()
    const legacy = Partitioners.LegacyPartitioner()
    const differ = Array.from({ length: 200 }, (_, i) => `key-${i}`).filter((key) => {
      const args = { topic: 't', partitionMetadata: meta(12), message: { key, value: null } }
      return java(args) !== legacy(args)
    })
    expect(differ.length).toBeGreaterThan(100)
    expect(typeof legacyMurmur2('abc')).toBe('number')
  })

  it('explicit partitions win; keyless messages go round-robin over partitions with a leader', () => {
    const p = Partitioners.DefaultPartitioner()
    expect(p({ topic: 't', partitionMetadata: meta(3), message: { key: 'x', value: null, partition: 2 } })).toBe(2)
    const withLeaders = meta(4).map((m) => (m.partitionId === 1 ? { ...m, leader: -1 } : m))
    const picked = Array.from({ length: 30 }, () => p({ topic: 'rr', partitionMetadata: withLeaders, message: { value: 'v' } }))
    expect(new Set(picked)).toEqual(new Set([0, 2, 3]))
    for (let i = 1; i < picked.length; i++) expect([0, 2, 3].indexOf(picked[i]!)).toBe(([0, 2, 3].indexOf(picked[i - 1]!) + 1) % 3)
  })
})
