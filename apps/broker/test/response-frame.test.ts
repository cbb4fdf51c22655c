import { ApiKeys, Fetch, Reader, encodeResponseFrame } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { encodeResponseChunks } from '../src/response-frame.js'

function partition(i: number, records: Buffer | null, tagged: boolean) {
  return {
    partitionIndex: i,
    errorCode: 0,
    highWatermark: 100n,
    lastStableOffset: 100n,
    logStartOffset: 0n,
    abortedTransactions: i % 2 === 0 ? null : [{ producerId: 7n, firstOffset: 3n }],
    preferredReadReplica: -1,
    records,
    // Tagged fields written after the records: their lengths are patched in after the cut.
    ...(tagged ? { currentLeader: { leaderId: 1, leaderEpoch: 5 }, divergingEpoch: { epoch: 2, endOffset: 40n } } : {}),
  }
}

function response(v: number, sizes: (number | null)[]) {
  const byId = v >= 13
  const records = sizes.map((n, i) => (n === null ? null : Buffer.alloc(n, i + 1)))
  return {
    throttleTimeMs: 0,
    errorCode: 0,
    sessionId: 0,
    responses: [
      { ...(byId ? { topicId: 'AAAAAAAAAAAAAAAAAAAAAQ' } : { topic: 'a-topic' }), partitions: records.slice(0, 2).map((r, i) => partition(i, r, v >= 12)) },
      { ...(byId ? { topicId: 'AAAAAAAAAAAAAAAAAAAAAg' } : { topic: 'b' }), partitions: records.slice(2).map((r, i) => partition(i, r, v >= 12)) },
    ],
  }
}

describe('encodeResponseChunks', () => {
  it.each([4, 7, 11, 12, 13, 16, 17])('writes Fetch v%i byte for byte as the codec does, records as their own chunks', (v) => {
    // Small record sets are copied; large ones (and one that makes the header buffer grow after a cut) are spliced.
    const body = response(v, [5000, null, 300, 2_000_000, 0])
    const chunks = encodeResponseChunks(ApiKeys.Fetch, v, 99, body)
    // Buffer.equals: vitest's deep equality walks megabytes element by element.
    expect(Buffer.concat(chunks).equals(encodeResponseFrame(ApiKeys.Fetch, v, 99, body))).toBe(true)
    const spliced = body.responses.flatMap((t) => t.partitions.map((p) => p.records)).filter((r) => r !== null && r.length >= 4096)
    expect(spliced).toHaveLength(2)
    // The spliced chunks are the stored buffers themselves (===), not copies.
    for (const r of spliced) expect(chunks.includes(r!)).toBe(true)
    const decoded = Fetch.decodeResponse(new Reader(Buffer.concat(chunks).subarray(v >= 12 ? 9 : 8)), v)
    expect(decoded.responses[1]!.partitions[1]!.records?.length).toBe(2_000_000)
  })

  it('keeps other responses in one buffer', () => {
    const body = { throttleTimeMs: 0, errorCode: 0, apiKeys: [{ apiKey: 0, minVersion: 0, maxVersion: 11 }], finalizedFeaturesEpoch: -1n, supportedFeatures: [], finalizedFeatures: [], zkMigrationReady: false }
    const chunks = encodeResponseChunks(ApiKeys.ApiVersions, 3, 1, body)
    expect(chunks).toHaveLength(1)
    expect(chunks[0]).toEqual(encodeResponseFrame(ApiKeys.ApiVersions, 3, 1, body))
  })
})
