// X1: the machine's physical limits, measured in the same run, beside which the
// broker's ingest is judged: loopback TCP between two processes (as between a client
// and the broker) and sequential disk writes with an fsync at the end (as a log
// segment is written), in the temp directory the brokers' data lives in.
import { spawn } from 'node:child_process'
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { encodeRecordBatch } from '@tidelog/protocol'
import { makeRecords } from '../clients/records.js'
import { interleave } from '../matrix.js'
import { entryOf, makeRow } from '../rows.js'
import type { ScenarioResult, Suite } from '../types.js'

const SENDER = `
const net = require('node:net')
const [port, ms] = process.argv.slice(1).map(Number)
const buf = Buffer.alloc(1 << 20, 7)
const s = net.connect(port, '127.0.0.1', () => {
  const end = Date.now() + ms
  const more = () => {
    while (Date.now() < end) if (!s.write(buf)) return void s.once('drain', more)
    s.end()
  }
  more()
})`

/** MB/s received from another process over loopback TCP during about `ms`. */
export function loopbackTcp(ms: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let bytes = 0
    let first = 0
    const server = createServer((sock) => {
      sock.on('data', (d: Buffer) => {
        if (bytes === 0) first = performance.now()
        bytes += d.length
      })
      sock.on('end', () => {
        const secs = (performance.now() - first) / 1000
        server.close()
        resolve(bytes / 1e6 / secs)
      })
      sock.on('error', reject)
    })
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as AddressInfo).port
      const child = spawn(process.execPath, ['-e', SENDER, String(port), String(ms)], { stdio: 'ignore' })
      child.once('error', reject)
      child.once('exit', (code) => {
        if (code !== 0) reject(new Error(`loopback sender exited with ${code}`))
      })
    })
  })
}

/** MB/s writing `total` bytes in 1 MiB writes, fsync included. */
export function sequentialDisk(total: number): number {
  const dir = mkdtempSync(join(tmpdir(), 'tidelog-bench-disk-'))
  const buf = Buffer.alloc(1 << 20, 0x5a)
  try {
    const fd = openSync(join(dir, 'segment'), 'w')
    const t0 = performance.now()
    for (let done = 0; done < total; done += buf.length) writeSync(fd, buf)
    fsyncSync(fd)
    const secs = (performance.now() - t0) / 1000
    closeSync(fd)
    return total / 1e6 / secs
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

export const limits: Suite = {
  name: 'limits',
  description: 'X1: loopback TCP and sequential disk write (MB/s) on this machine, and the tidelog broker\'s P1 ingest as a fraction of the smaller',
  ids: ['X1'],
  async run(ctx) {
    ctx.log('X1: physical limits')
    const o = await interleave(
      [
        { name: 'tcp', run: async () => ({ rate: await loopbackTcp(ctx.quick ? 500 : 2000) }) },
        { name: 'disk', run: async () => ({ rate: sequentialDisk((ctx.quick ? 256 : 1024) * 2 ** 20) }) },
      ],
      { rounds: ctx.rounds, onRun: (n, r, m) => ctx.log(`  X1 ${n} round ${r + 1}: ${m instanceof Error ? `FAILED ${m.message}` : `${Math.round(m.rate!)} MB/s`}`) },
    )
    return [
      makeRow({ id: 'X1.tcp', title: 'loopback TCP, one process to another, 1 MiB writes', unit: 'MB/s', higherIsBetter: true }, [['machine', entryOf(o.get('tcp'), 'rate')]]),
      makeRow({ id: 'X1.disk', title: `sequential write of ${ctx.quick ? 256 : 1024} MiB in 1 MiB writes, then fsync`, unit: 'MB/s', higherIsBetter: true }, [['machine', entryOf(o.get('disk'), 'rate')]]),
    ]
  },
}

/** Bytes a P1 record takes inside a record batch of batch.size, framing and batch header shared out. */
export function batchBytesPerRecord(): number {
  const n = 136
  const records = makeRecords(n).map((r, i) => ({ key: r.key, value: r.value, timestamp: 1_700_000_000_000 + i }))
  return encodeRecordBatch({ records }).length / n
}

/**
 * The tidelog broker's ingest: its best client's median P1 rate in MB/s of record batches, as a
 * fraction of the smaller physical limit. Needs the P1 and X1 rows of the same run.
 */
export function ingestRow(rows: ScenarioResult[]): ScenarioResult | undefined {
  const p1 = rows.find((r) => r.id === 'P1@tidelog-broker')
  const tcp = rows.find((r) => r.id === 'X1.tcp')?.results.machine
  const disk = rows.find((r) => r.id === 'X1.disk')?.results.machine
  if (p1 === undefined || tcp === undefined || disk === undefined) return undefined
  const best = Object.entries(p1.results).sort((a, b) => b[1].median - a[1].median)[0]
  if (best === undefined) return undefined
  const perRecord = batchBytesPerRecord()
  const mb = (x: number) => (x * perRecord) / 1e6
  const s = best[1]
  const ingest = { median: mb(s.median), min: mb(s.min), max: mb(s.max), runs: s.runs.map(mb) }
  const limit = tcp.median < disk.median ? { name: 'tcp', s: tcp } : { name: 'disk', s: disk }
  return {
    id: 'X1.ingest',
    title: `tidelog broker ingest under P1 (${best[0]} client, ${perRecord.toFixed(1)} B per record in a batch) against the smaller limit (${limit.name})`,
    unit: 'MB/s',
    higherIsBetter: true,
    results: { 'tidelog-broker': ingest, [`limit (${limit.name})`]: limit.s },
    ratios: { [`tidelog-broker/limit (${limit.name})`]: Math.round((ingest.median / limit.s.median) * 1000) / 1000 },
  }
}
