import { encodeRecordBatch, type EncodeRecordBatchInput } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { Chunk, nextOffsetAfter } from '../src/chunk.js'
import { PartitionState } from '../src/positions.js'

const batch = (baseOffset: number, values: string[], extra: Partial<EncodeRecordBatchInput> = {}) =>
  encodeRecordBatch({ baseOffset: BigInt(baseOffset), records: values.map((v) => ({ value: v })), now: 1000, ...extra })

/** A transaction marker: control batch whose record key is (version 0, type) (KIP-98). */
const marker = (offset: number, producerId: bigint, commit: boolean) => {
  const key = Buffer.alloc(4)
  key.writeInt16BE(commit ? 1 : 0, 2)
  return encodeRecordBatch({ baseOffset: BigInt(offset), isControl: true, isTransactional: true, producerId, producerEpoch: 0, records: [{ key, value: Buffer.alloc(6) }], now: 1000 })
}

async function drain(c: Chunk): Promise<string[]> {
  const out: string[] = []
  for (;;) {
    const r = c.next()
    if (r === null) return out
    if (r instanceof Promise) {
      await r
      continue
    }
    c.state.position = r.offset + 1n
    out.push(`${r.offset}:${r.value?.toString()}`)
  }
}

function chunk(state: PartitionState, records: Buffer, opts: { readCommitted?: boolean; aborted?: { producerId: bigint; firstOffset: bigint }[] } = {}) {
  return new Chunk(state, state.fetchEpoch, nextOffsetAfter(records), records, 0n, -1n, 0n, opts.aborted ?? null, opts.readCommitted ?? false, true, undefined)
}

const at = (offset: bigint) => {
  const s = new PartitionState('t', 0)
  s.seek(offset)
  return s
}

describe('Chunk', () => {
  it('skips the records of a batch before the position, and batches wholly before it', async () => {
    const records = Buffer.concat([batch(0, ['a', 'b', 'c']), batch(3, ['d', 'e', 'f'])])
    const s = at(4n)
    expect(await drain(chunk(s, records))).toEqual(['4:e', '5:f'])
    expect(s.position).toBe(6n)
  })

  it('reads compressed batches (asynchronously) and ignores a partial trailing batch', async () => {
    const full = Buffer.concat([batch(0, ['a', 'b'], { compression: 'gzip' }), batch(2, ['c'], { compression: 'lz4' }), batch(3, ['d'])])
    const cut = full.subarray(0, full.length - 5)
    expect(nextOffsetAfter(cut)).toBe(3n)
    const s = at(0n)
    expect(await drain(chunk(s, cut))).toEqual(['0:a', '1:b', '2:c'])
  })

  it('skips control batches and moves past them, acked following when nothing is held', async () => {
    const records = Buffer.concat([batch(0, ['a'], { producerId: 7n, producerEpoch: 0, isTransactional: true }), marker(1, 7n, true), batch(2, ['b'])])
    const s = at(0n)
    expect(await drain(chunk(s, records))).toEqual(['0:a', '2:b'])
    expect(s.position).toBe(3n)
  })

  it('read_committed hides aborted transactions from the aborted list, until their abort marker', async () => {
    const records = Buffer.concat([
      batch(0, ['keep-1']),
      batch(1, ['aborted-1', 'aborted-2'], { producerId: 5n, producerEpoch: 0, isTransactional: true }),
      batch(3, ['committed-1'], { producerId: 6n, producerEpoch: 0, isTransactional: true }),
      marker(4, 5n, false),
      marker(5, 6n, true),
      // Producer 5 again, in a new transaction that committed: visible.
      batch(6, ['later-5'], { producerId: 5n, producerEpoch: 0, isTransactional: true }),
      marker(7, 5n, true),
    ])
    const aborted = [{ producerId: 5n, firstOffset: 1n }]
    expect(await drain(chunk(at(0n), records, { readCommitted: true, aborted }))).toEqual(['0:keep-1', '3:committed-1', '6:later-5'])
    // read_uncommitted sees everything but control records.
    expect(await drain(chunk(at(0n), records, { aborted }))).toEqual(['0:keep-1', '1:aborted-1', '2:aborted-2', '3:committed-1', '6:later-5'])
  })

  it('is stale once the partition is sought elsewhere', () => {
    const s = at(0n)
    const c = chunk(s, batch(0, ['a']))
    expect(c.isStale).toBe(false)
    s.seek(10n)
    expect(c.isStale).toBe(true)
  })

  it('refuses a batch length below any batch size instead of looping', () => {
    const bad = Buffer.alloc(20)
    bad.writeInt32BE(2, 8)
    expect(() => nextOffsetAfter(bad)).toThrow(/below the minimum/)
    const s = at(0n)
    const c = new Chunk(s, s.fetchEpoch, 1n, Buffer.concat([batch(0, ['a']), bad]), 0n, -1n, 0n, null, false, true, undefined)
    expect((c.next() as { offset: bigint }).offset).toBe(0n)
    expect(() => c.next()).toThrow(/below the minimum/)
  })
})

describe('Chunk with hostile bytes', () => {
  it('property: mutated and truncated fetch data ends in records or typed errors, never a hang', async () => {
    const { default: fc } = await import('fast-check')
    const { TidelogError } = await import('@tidelog/protocol')
    const valid = Buffer.concat([
      batch(0, ['a', 'b', 'c']),
      batch(3, ['d'], { compression: 'gzip' }),
      batch(4, ['e'], { producerId: 3n, producerEpoch: 0, isTransactional: true }),
      marker(5, 3n, false),
      batch(6, ['f', 'g']),
    ])
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ at: fc.nat(valid.length - 1), byte: fc.integer({ min: 0, max: 255 }) }), { maxLength: 8 }),
        fc.nat(valid.length),
        fc.boolean(),
        async (flips, cut, readCommitted) => {
          const bytes = Buffer.from(valid.subarray(0, Math.max(cut, 1)))
          for (const f of flips) if (f.at < bytes.length) bytes[f.at] = f.byte
          const s = at(0n)
          try {
            const end = nextOffsetAfter(bytes)
            const c = new Chunk(s, s.fetchEpoch, end, bytes, 0n, -1n, 0n, [{ producerId: 3n, firstOffset: 4n }], readCommitted, flips.length % 2 === 0, 1 << 20)
            for (let steps = 0; ; steps++) {
              // Each step consumes a record or a batch: a bounded number of steps or it hangs.
              expect(steps).toBeLessThan(100)
              const r = c.next()
              if (r === null) break
              if (r instanceof Promise) await r
              else s.position = r.offset + 1n
            }
          } catch (err) {
            expect(err).toBeInstanceOf(TidelogError)
          }
        },
      ),
      { numRuns: 3000 },
    )
  })
})
