/**
 * Test helpers for the producer: reading a topic back at the codec level (no consumer
 * needed), and a TCP proxy whose connections the test can cut.
 */
import { createServer, connect, type Server, type Socket } from 'node:net'
import { decodeRecordBatchesAsync, type Record } from '@tidelog/protocol'
import { RawClient } from '../../../test/helpers/raw-client.js'

export interface ReadRecord {
  partition: number
  offset: bigint
  key: string | null
  value: string | null
  timestamp: bigint
  headers: { key: string; value: string | null }[]
  /** The producer id and sequence of the batch it came in (-1 when not idempotent). */
  producerId: bigint
  baseSequence: number
  compression: number
}

/**
 * Fetches every partition of a topic from offset 0 until `expected` records were read (or
 * `timeoutMs` passed), through Fetch v11 (topic names; every broker from 2.3 to 4.x has it).
 */
export async function readTopic(
  host: string,
  port: number,
  topic: string,
  partitions: number,
  expected: number,
  timeoutMs = 30_000,
): Promise<ReadRecord[][]> {
  const client = await RawClient.connect(host, port)
  const out: ReadRecord[][] = Array.from({ length: partitions }, () => [])
  const offsets = new Array<bigint>(partitions).fill(0n)
  const deadline = Date.now() + timeoutMs
  let total = 0
  try {
    while (total < expected && Date.now() < deadline) {
      const { body } = await client.request(1, 11, {
        replicaId: -1,
        maxWaitMs: 100,
        minBytes: 1,
        maxBytes: 64 * 1024 * 1024,
        isolationLevel: 0,
        sessionId: 0,
        sessionEpoch: -1,
        topics: [{ topic, partitions: offsets.map((fetchOffset, partition) => ({ partition, currentLeaderEpoch: -1, fetchOffset, logStartOffset: -1n, partitionMaxBytes: 16 * 1024 * 1024 })) }],
        forgottenTopicsData: [],
        rackId: '',
      })
      for (const t of body.responses) {
        for (const p of t.partitions) {
          if (p.errorCode !== 0) throw new Error(`fetch ${topic}-${p.partitionIndex}: error ${p.errorCode}`)
          if (p.records === null || p.records.length === 0) continue
          for (const batch of await decodeRecordBatchesAsync(p.records)) {
            for (const r of batch as Iterable<Record>) {
              if (r.offset < offsets[p.partitionIndex]!) continue
              out[p.partitionIndex]!.push({
                partition: p.partitionIndex,
                offset: r.offset,
                key: r.key === null ? null : r.key.toString('utf8'),
                value: r.value === null ? null : r.value.toString('utf8'),
                timestamp: r.timestamp,
                headers: r.headers.map((h) => ({ key: h.key, value: h.value === null ? null : h.value.toString('utf8') })),
                producerId: batch.producerId,
                baseSequence: batch.baseSequence,
                compression: batch.compression,
              })
              total++
            }
            offsets[p.partitionIndex] = batch.baseOffset + BigInt(batch.lastOffsetDelta) + 1n
          }
        }
      }
    }
  } finally {
    client.close()
  }
  return out
}

export interface CuttableProxy {
  port: number
  /** Connections currently open through the proxy. */
  readonly open: number
  /** How many connections have been accepted so far. */
  readonly accepted: number
  /** Destroys every connection now (both sides), as a network failure would. */
  cut(): number
  /** Stops (true) or resumes (false) forwarding the client's bytes, as a stalled network would. */
  stall(on: boolean): void
  close(): Promise<void>
}

/**
 * A TCP proxy in front of one broker. Kafka clients connect to the addresses the broker
 * advertises, so the broker must advertise the proxy's port (Kafka: advertised.listeners;
 * tidelog: advertisedPort) for the client's every connection to pass through it.
 */
export async function startCuttableProxy(target: () => { host: string; port: number }, listenPort = 0): Promise<CuttableProxy> {
  const pairs = new Set<[Socket, Socket]>()
  let accepted = 0
  let stalled = false
  const server: Server = createServer((client) => {
    accepted++
    const { host, port } = target()
    const upstream = connect(port, host)
    const pair: [Socket, Socket] = [client, upstream]
    pairs.add(pair)
    client.setNoDelay(true)
    upstream.setNoDelay(true)
    if (!stalled) client.pipe(upstream)
    else client.pause()
    upstream.pipe(client)
    const end = () => {
      client.destroy()
      upstream.destroy()
      pairs.delete(pair)
    }
    client.on('close', end)
    upstream.on('close', end)
    client.on('error', end)
    upstream.on('error', end)
  })
  await new Promise<void>((resolve) => server.listen(listenPort, '127.0.0.1', resolve))
  return {
    port: (server.address() as { port: number }).port,
    get open() {
      return pairs.size
    },
    get accepted() {
      return accepted
    },
    cut() {
      const n = pairs.size
      for (const [a, b] of [...pairs]) {
        a.destroy()
        b.destroy()
      }
      pairs.clear()
      return n
    },
    stall(on) {
      if (on === stalled) return
      stalled = on
      for (const [client, upstream] of pairs) {
        if (on) {
          client.unpipe(upstream)
          client.pause()
        } else {
          client.pipe(upstream)
          client.resume()
        }
      }
    },
    async close() {
      for (const [a, b] of pairs) {
        a.destroy()
        b.destroy()
      }
      await new Promise((r) => server.close(r))
    },
  }
}

/** A free loopback port (closed again before it is returned). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

/** 10,000 distinct keys: ASCII, Latin-1, Cyrillic, CJK, emoji (4-byte UTF-8), lengths 0-40. */
export function randomKeys(count = 10_000, seed = 0x2545f491): string[] {
  const alphabet = ['a', 'Z', '9', '-', ' ', 'é', 'ß', 'Ж', 'щ', '中', '文', '🙂', '🚀', 'ø', '\u0000', '_']
  let s = seed
  const rnd = () => {
    s ^= s << 13
    s ^= s >>> 17
    s ^= s << 5
    return (s >>> 0) / 2 ** 32
  }
  const out = new Set<string>()
  while (out.size < count) {
    const len = Math.floor(rnd() * 41)
    let k = ''
    for (let i = 0; i < len; i++) k += alphabet[Math.floor(rnd() * alphabet.length)]
    out.add(k)
  }
  return [...out]
}

/**
 * Reads every partition from offset 0 until `expected` records were read, keeping only each
 * record's value parsed as an integer (light enough for a million records), per partition in
 * offset order.
 */
export async function readValues(host: string, port: number, topic: string, partitions: number, expected: number, timeoutMs = 120_000): Promise<number[][]> {
  const client = await RawClient.connect(host, port)
  const out: number[][] = Array.from({ length: partitions }, () => [])
  const offsets = new Array<bigint>(partitions).fill(0n)
  const deadline = Date.now() + timeoutMs
  let total = 0
  try {
    while (total < expected && Date.now() < deadline) {
      const { body } = await client.request(1, 11, {
        replicaId: -1,
        maxWaitMs: 100,
        minBytes: 1,
        maxBytes: 64 * 1024 * 1024,
        isolationLevel: 0,
        sessionId: 0,
        sessionEpoch: -1,
        topics: [{ topic, partitions: offsets.map((fetchOffset, partition) => ({ partition, currentLeaderEpoch: -1, fetchOffset, logStartOffset: -1n, partitionMaxBytes: 8 * 1024 * 1024 })) }],
        forgottenTopicsData: [],
        rackId: '',
      })
      for (const t of body.responses) {
        for (const p of t.partitions) {
          if (p.errorCode !== 0) throw new Error(`fetch ${topic}-${p.partitionIndex}: error ${p.errorCode}`)
          if (p.records === null || p.records.length === 0) continue
          for (const batch of await decodeRecordBatchesAsync(p.records)) {
            for (const r of batch as Iterable<Record>) {
              if (r.offset < offsets[p.partitionIndex]!) continue
              out[p.partitionIndex]!.push(Number(r.value!.toString('latin1')))
              total++
            }
            offsets[p.partitionIndex] = batch.baseOffset + BigInt(batch.lastOffsetDelta) + 1n
          }
        }
      }
    }
  } finally {
    client.close()
  }
  return out
}
