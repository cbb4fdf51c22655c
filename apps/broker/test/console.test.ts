import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { ApiKeys, ErrorCodes, ZERO_UUID, encodeConsumerProtocolAssignment, encodeConsumerProtocolSubscription, encodeRecordBatch } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { type Broker, type BrokerOptions, startBroker } from '../src/index.js'
import { connectTracked, trackOpened } from './helpers/opened.js'
import type { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'
import { until } from './helpers/until.js'
import * as txn from './txn/helpers.js'

// The console's JSON API over HTTP, checked against what was written over the Kafka protocol.

const open = trackOpened()

async function start(opts: BrokerOptions = {}) {
  const b = await startBroker({ port: 0, dataDir: tempDir(), consolePort: 0, numPartitions: 2, groups: { initialRebalanceDelayMs: 0 }, ...opts })
  open.brokers.push(b)
  return b
}

async function get(b: Broker, path: string): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(new URL(path, b.console!.url))
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: res.headers.get('content-type')?.startsWith('application/json') ? JSON.parse(text) : text }
}

async function produce(c: RawClient, topic: string, partition: number, records: Buffer): Promise<number> {
  const r = await c.request(ApiKeys.Produce, 9, { transactionalId: null, acks: -1, timeoutMs: 5000, topicData: [{ name: topic, partitionData: [{ index: partition, records }] }] })
  expect(r.responses[0].partitionResponses[0].errorCode).toBe(ErrorCodes.NONE)
  return Number(r.responses[0].partitionResponses[0].baseOffset)
}

async function createTopic(c: RawClient, name: string, partitions: number, configs: Record<string, string> = {}): Promise<void> {
  const r = await c.request(ApiKeys.CreateTopics, 7, {
    topics: [{ name, numPartitions: partitions, replicationFactor: 1, assignments: [], configs: Object.entries(configs).map(([n, value]) => ({ name: n, value })) }],
    timeoutMs: 1000,
    validateOnly: false,
  })
  expect(r.topics[0].errorCode).toBe(ErrorCodes.NONE)
}

const T0 = 1_700_000_000_000

describe('console JSON API', () => {
  it('describes topics, partitions and configs as the broker holds them', async () => {
    const b = await start()
    const c = await connectTracked(open, b)
    await createTopic(c, 'events', 3, { 'retention.ms': '3600000' })
    const batch = encodeRecordBatch({ now: T0, records: [{ value: 'a' }, { value: 'b' }, { value: 'c' }] })
    await produce(c, 'events', 1, batch)

    const health = await get(b, '/api/health')
    expect(health.status).toBe(200)
    expect(health.body).toMatchObject({ status: 'online', nodeId: 1, clusterId: expect.any(String), topics: 1, partitions: 3, offlinePartitions: 0, logBytes: batch.length })
    expect(health.body.totals).toMatchObject({ messagesIn: 3, bytesIn: batch.length })

    const list = await get(b, '/api/topics')
    expect(list.body).toEqual([{ name: 'events', topicId: expect.any(String), internal: false, partitions: 3, size: batch.length, messages: 3 }])

    const t = await get(b, '/api/topics/events')
    expect(t.body.topicId).toBe(list.body[0].topicId)
    expect(t.body.partitions[1]).toEqual({ partition: 1, offline: false, logStartOffset: 0, logEndOffset: 3, highWatermark: 3, lastStableOffset: 3, size: batch.length, segments: 1 })
    expect(t.body.partitions[0]).toMatchObject({ logEndOffset: 0, size: 0 })
    const configs = new Map(t.body.configs.map((x: { name: string }) => [x.name, x]))
    expect(configs.get('retention.ms')).toEqual({ name: 'retention.ms', value: '3600000', override: true })
    expect(configs.get('cleanup.policy')).toEqual({ name: 'cleanup.policy', value: 'delete', override: false })

    const missing = await get(b, '/api/topics/nope')
    expect(missing.status).toBe(404)
    expect(missing.body).toEqual({ error: 'UNKNOWN_TOPIC_OR_PARTITION', message: 'topic nope does not exist' })
  })

  it('browses a partition from an offset, a time or the end, decoding UTF-8, JSON, binary and headers', async () => {
    const b = await start()
    const c = await connectTracked(open, b)
    await createTopic(c, 'logs', 1)
    const big = Buffer.alloc(100 * 1024, 'x')
    await produce(
      c,
      'logs',
      0,
      encodeRecordBatch({
        now: T0,
        records: [
          { key: 'user-1', value: 'héllo wörld', timestamp: T0, headers: [{ key: 'source', value: 'web' }, { key: 'bin', value: Buffer.from([0xff, 0xfe]) }] },
          { key: null, value: JSON.stringify({ id: 7, tags: ['a'] }), timestamp: T0 + 1000 },
        ],
      }),
    )
    await produce(c, 'logs', 0, encodeRecordBatch({ now: T0 + 2000, records: [{ value: Buffer.from([0x00, 0xc3, 0x28]), timestamp: T0 + 2000 }, { value: null, timestamp: T0 + 3000 }, { value: big, timestamp: T0 + 4000 }] }))

    const page = await get(b, '/api/topics/logs/partitions/0/messages?offset=0&limit=2')
    expect(page.status).toBe(200)
    expect(page.body).toMatchObject({ topic: 'logs', partition: 0, nextOffset: 2, logStartOffset: 0, highWatermark: 5 })
    expect(page.body.records).toEqual([
      {
        offset: 0,
        timestamp: T0,
        key: { size: 6, text: 'user-1' },
        value: { size: Buffer.byteLength('héllo wörld'), text: 'héllo wörld' },
        headers: [
          { key: 'source', value: { size: 3, text: 'web' } },
          { key: 'bin', value: { size: 2, base64: Buffer.from([0xff, 0xfe]).toString('base64') } },
        ],
      },
      { offset: 1, timestamp: T0 + 1000, key: null, value: { size: 21, text: '{"id":7,"tags":["a"]}', json: true }, headers: [] },
    ])

    // Continuing from nextOffset starts inside the second batch.
    const rest = await get(b, `/api/topics/logs/partitions/0/messages?offset=${page.body.nextOffset}`)
    expect(rest.body.records.map((r: { offset: number }) => r.offset)).toEqual([2, 3, 4])
    expect(rest.body.records[0].value).toEqual({ size: 3, base64: Buffer.from([0x00, 0xc3, 0x28]).toString('base64') })
    expect(rest.body.records[1].value).toBeNull()
    // A 100 KiB value is sent cut to 64 KiB, saying so.
    expect(rest.body.records[2].value).toMatchObject({ size: big.length, truncated: true })
    expect(rest.body.records[2].value.text).toHaveLength(64 * 1024)
    expect(rest.body.nextOffset).toBe(5)

    const byTime = await get(b, `/api/topics/logs/partitions/0/messages?timestamp=${T0 + 1500}&limit=1`)
    expect(byTime.body.records.map((r: { offset: number }) => r.offset)).toEqual([2])
    const latest = await get(b, '/api/topics/logs/partitions/0/messages?last=2')
    expect(latest.body.records.map((r: { offset: number }) => r.offset)).toEqual([3, 4])
    // The live tail polls from the high watermark: nothing yet, then exactly what arrives.
    const tail = await get(b, '/api/topics/logs/partitions/0/messages?offset=5')
    expect(tail.body).toMatchObject({ records: [], nextOffset: 5 })
    await produce(c, 'logs', 0, encodeRecordBatch({ now: T0, records: [{ value: 'new' }] }))
    const tail2 = await get(b, '/api/topics/logs/partitions/0/messages?offset=5')
    expect(tail2.body.records.map((r: { value: { text: string } }) => r.value.text)).toEqual(['new'])

    for (const [query, status, error] of [
      ['offset=abc', 400, 'INVALID_REQUEST'],
      ['limit=0', 400, 'INVALID_REQUEST'],
      ['limit=501', 400, 'INVALID_REQUEST'],
      ['timestamp=1e3', 400, 'INVALID_REQUEST'],
    ] as const) {
      const r = await get(b, `/api/topics/logs/partitions/0/messages?${query}`)
      expect([r.status, r.body.error]).toEqual([status, error])
    }
    expect((await get(b, '/api/topics/logs/partitions/3/messages')).body.error).toBe('UNKNOWN_TOPIC_OR_PARTITION')
    expect((await get(b, '/api/topics/logs/partitions/x/messages')).status).toBe(400)
    // An offset before the start or past the end is clamped, not an error: the page shows what exists.
    expect((await get(b, '/api/topics/logs/partitions/0/messages?offset=-10&limit=1')).body.records[0].offset).toBe(0)
    expect((await get(b, '/api/topics/logs/partitions/0/messages?offset=99')).body).toMatchObject({ records: [], nextOffset: 6 })
  })

  it('keeps a page of large records to a few MiB, continuing where it stopped', async () => {
    const b = await start()
    const c = await connectTracked(open, b)
    await createTopic(c, 'blobs', 1)
    const value = Buffer.alloc(100 * 1024, 'v')
    for (let i = 0; i < 80; i += 8) await produce(c, 'blobs', 0, encodeRecordBatch({ now: T0, records: Array.from({ length: 8 }, () => ({ value })) }))
    // Each value is shown cut to 64 KiB; 4 MiB of them is 64 records, though 500 were asked for.
    const first = await get(b, '/api/topics/blobs/partitions/0/messages?offset=0&limit=500')
    expect(first.body.records).toHaveLength(64)
    expect(first.body.nextOffset).toBe(64)
    const rest = await get(b, `/api/topics/blobs/partitions/0/messages?offset=64&limit=500`)
    expect(rest.body.records.map((r: { offset: number }) => r.offset)).toEqual(Array.from({ length: 16 }, (_, i) => 64 + i))
  })

  it('reads read_committed as a consumer does: up to the last stable offset, aborted transactions left out', async () => {
    const { b, c } = await txn.start({ consolePort: 0 }, tempDir(), 1)
    await txn.produce(c, null, -1n, -1, 0, -1, { n: 2, transactional: false })
    const runTxn = async (id: string, n: number, end: 'abort' | 'commit' | 'open') => {
      const { producerId, producerEpoch } = await txn.init(c, id)
      expect(await txn.addPartitions(c, id, producerId, producerEpoch, [0])).toEqual([0])
      expect((await txn.produce(c, id, producerId, producerEpoch, 0, 0, { n })).errorCode).toBe(0)
      if (end !== 'open') expect((await txn.endTxn(c, id, producerId, producerEpoch, end === 'commit')).errorCode).toBe(0)
    }
    await runTxn('aborted', 3, 'abort') // offsets 2-4, marker 5
    await runTxn('committed', 2, 'commit') // offsets 6-7, marker 8
    await runTxn('open', 2, 'open') // offsets 9-10, no marker yet
    const offsets = (body: { records: { offset: number }[] }) => body.records.map((r) => r.offset)
    const uncommitted = await until('both markers written', async () => {
      const r = await get(b, `/api/topics/${txn.TOPIC}/partitions/0/messages?offset=0`)
      return r.body.highWatermark === 11 ? r.body : undefined
    })
    expect(offsets(uncommitted)).toEqual([0, 1, 2, 3, 4, 6, 7, 9, 10])
    expect(uncommitted).toMatchObject({ isolation: 'read_uncommitted', lastStableOffset: 9, nextOffset: 11 })
    const committed = await get(b, `/api/topics/${txn.TOPIC}/partitions/0/messages?offset=0&isolation=read_committed`)
    expect(offsets(committed.body)).toEqual([0, 1, 6, 7])
    expect(committed.body).toMatchObject({ isolation: 'read_committed', nextOffset: 9, highWatermark: 11, lastStableOffset: 9 })
    const latest = await get(b, `/api/topics/${txn.TOPIC}/partitions/0/messages?last=2&isolation=read_committed`)
    // The last two offsets below the last stable offset are record 7 and the commit marker.
    expect(offsets(latest.body)).toEqual([7])
    expect((await get(b, `/api/topics/${txn.TOPIC}/partitions/0/messages?isolation=dirty`)).body.error).toBe('INVALID_REQUEST')
  })

  it('shows a group with its members, their assignments and the lag per partition', async () => {
    const b = await start()
    const c = await connectTracked(open, b)
    await createTopic(c, 'orders', 2)
    await produce(c, 'orders', 0, encodeRecordBatch({ now: T0, records: Array.from({ length: 10 }, (_, i) => ({ value: `o${i}` })) }))
    await produce(c, 'orders', 1, encodeRecordBatch({ now: T0, records: Array.from({ length: 4 }, (_, i) => ({ value: `p${i}` })) }))
    const subscription = encodeConsumerProtocolSubscription({ topics: ['orders'], userData: null }, 0)
    const joinBody = (memberId: string) => ({ groupId: 'billing', sessionTimeoutMs: 30_000, rebalanceTimeoutMs: 30_000, memberId, groupInstanceId: null, protocolType: 'consumer', protocols: [{ name: 'range', metadata: subscription }] })
    let join = await c.request(ApiKeys.JoinGroup, 5, joinBody(''))
    if (join.errorCode === ErrorCodes.MEMBER_ID_REQUIRED) join = await c.request(ApiKeys.JoinGroup, 5, joinBody(join.memberId))
    expect(join.errorCode).toBe(ErrorCodes.NONE)
    const assignment = encodeConsumerProtocolAssignment({ assignedPartitions: [{ topic: 'orders', partitions: [1, 0] }], userData: null }, 0)
    const sync = await c.request(ApiKeys.SyncGroup, 5, { groupId: 'billing', generationId: join.generationId, memberId: join.memberId, groupInstanceId: null, protocolType: 'consumer', protocolName: 'range', assignments: [{ memberId: join.memberId, assignment }] })
    expect(sync.errorCode).toBe(ErrorCodes.NONE)
    const commit = await c.request(ApiKeys.OffsetCommit, 8, {
      groupId: 'billing',
      generationIdOrMemberEpoch: join.generationId,
      memberId: join.memberId,
      groupInstanceId: null,
      topics: [{ name: 'orders', partitions: [{ partitionIndex: 0, committedOffset: 6n, committedLeaderEpoch: -1, committedMetadata: null }] }],
    })
    expect(commit.topics[0].partitions[0].errorCode).toBe(ErrorCodes.NONE)

    const list = await get(b, '/api/groups')
    expect(list.body).toEqual([{ groupId: 'billing', state: 'Stable', protocolType: 'consumer', members: 1, totalLag: 4 }])
    const g = await get(b, '/api/groups/billing')
    expect(g.body).toMatchObject({ groupId: 'billing', state: 'Stable', protocolType: 'consumer', protocol: 'range', totalLag: 4 })
    expect(g.body.members).toEqual([{ memberId: join.memberId, groupInstanceId: null, clientId: 'raw', clientHost: expect.stringContaining('127.0.0.1'), assignment: [{ topic: 'orders', partitions: [0, 1] }] }])
    expect(g.body.lag).toEqual([{ topic: 'orders', partition: 0, committed: 6, highWatermark: 10, lag: 4, memberId: join.memberId }])

    const none = await get(b, '/api/groups/nobody')
    expect([none.status, none.body.error]).toEqual([404, 'GROUP_ID_NOT_FOUND'])
  })

  it('keeps a per-topic throughput history and serves the pages themselves', async () => {
    const b = await start()
    const c = await connectTracked(open, b)
    await createTopic(c, 'rates', 1)
    const batch = encodeRecordBatch({ now: T0, records: Array.from({ length: 50 }, () => ({ value: 'x' })) })
    await produce(c, 'rates', 0, batch)
    // The sampler runs every second: wait for the interval that saw the produce.
    const sample = await until('a throughput sample with the produce', async () => {
      const h = (await get(b, '/api/throughput')).body as { t: number; topics: Record<string, { messagesIn: number; bytesIn: number }> }[]
      return h.find((s) => (s.topics.rates?.messagesIn ?? 0) > 0)
    })
    // A rate over an interval of about a second: 50 messages and the batch's bytes, divided by its length.
    expect(sample.topics.rates!.messagesIn / sample.topics.rates!.bytesIn).toBeCloseTo(50 / batch.length, 6)

    const page = await get(b, '/')
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'")
    expect(page.body).toContain('<script src="/app.js"></script>')
    for (const asset of ['/app.js', '/charts.js', '/app.css']) expect((await get(b, asset)).status).toBe(200)
    expect((await get(b, '/../../etc/passwd')).status).toBe(404)
    expect((await get(b, '/nope.html')).body).toEqual({ error: 'NOT_FOUND', message: 'no such page: /nope.html' })
    expect((await get(b, '/api/topics/%E0%A4%A')).status).toBe(400)
  })

  it('tidelog-broker --console-port prints the console on its ready line and serves it until SIGTERM', async () => {
    const main = fileURLToPath(new URL('../src/main.ts', import.meta.url))
    const dataDir = tempDir()
    const child = spawn(process.execPath, ['--import', 'tsx', main, '--port', '0', '--console-port', '0', '--data-dir', dataDir, '--log-level', 'error'], {
      cwd: fileURLToPath(new URL('../../../', import.meta.url)),
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    try {
      let out = ''
      const ready = await new Promise<string>((resolve, reject) => {
        child.stdout!.on('data', (d: Buffer) => {
          out += d.toString()
          if (out.includes('\n')) resolve(out)
        })
        exited.then((code) => reject(new Error(`exited ${code}`)))
      })
      const m = /, console (http:\/\/127\.0\.0\.1:(\d+)\/)\)\n$/.exec(ready)
      expect(m, ready).not.toBeNull()
      const health = await fetch(`${m![1]}api/health`)
      expect(await health.json()).toMatchObject({ status: 'online', topics: 0 })
      expect((await fetch(`${m![1]}metrics`)).status).toBe(200)
    } finally {
      child.kill('SIGTERM')
    }
    expect(await exited).toBe(0)
    expect(existsSync(`${dataDir}/.clean-shutdown`)).toBe(true)
  })
})
