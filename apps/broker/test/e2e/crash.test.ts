import { type ChildProcess, spawn } from 'node:child_process'
import { appendFileSync, readdirSync, statSync, truncateSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ApiKeys, ZERO_UUID, decodeRecordBatches } from '@tidelog/protocol'
import { afterEach, describe, expect, it } from 'vitest'
import { makeBatch } from '../helpers/batches.js'
import { RawClient } from '../helpers/raw-client.js'
import { tempDir } from '../helpers/tmp.js'

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url))
const ROOT = fileURLToPath(new URL('../../../../', import.meta.url))

const children: ChildProcess[] = []
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL')
})

/** Starts the CLI in a child process; resolves with its port once it prints its ready line. */
async function launch(dataDir: string, extra: string[] = []): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, '--port', '0', '--data-dir', dataDir, '--log-level', 'warn', ...extra], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  children.push(child)
  const port = await new Promise<number>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      const m = /listening on [^:]+:(\d+)/.exec(out)
      if (m !== null) resolve(Number(m[1]))
    })
    child.once('exit', (code) => reject(new Error(`broker exited with ${code}`)))
  })
  return { child, port }
}

async function readAll(c: RawClient, topic: string): Promise<{ offsets: bigint[]; values: string[] }> {
  const offsets: bigint[] = []
  const values: string[] = []
  let next = 0n
  for (;;) {
    const f = await c.request(ApiKeys.Fetch, 12, {
      replicaId: -1, maxWaitMs: 0, minBytes: 1, maxBytes: 1 << 20, isolationLevel: 0, sessionId: 0, sessionEpoch: -1,
      topics: [{ topic, partitions: [{ partition: 0, fetchOffset: next, partitionMaxBytes: 1 << 20 }] }],
      forgottenTopicsData: [], rackId: '',
    })
    const p = f.responses[0].partitions[0]
    if (p.errorCode !== 0) throw new Error(`fetch error ${p.errorCode}`)
    if (p.records.length === 0) return { offsets, values }
    for (const b of decodeRecordBatches(p.records)) {
      for (const r of b) {
        offsets.push(r.offset)
        values.push(r.value!.toString())
        next = r.offset + 1n
      }
    }
  }
}

describe('crash safety', () => {
  it('keeps every acknowledged record across kill -9, then recovers from cut and garbage segments', async () => {
    const dataDir = tempDir()
    let { child, port } = await launch(dataDir, ['--segment-bytes', '4096'])
    let c = await RawClient.connect(port)
    await c.request(ApiKeys.Metadata, 12, { topics: [{ name: 'crash', topicId: ZERO_UUID }], allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false })
    const acked: string[] = []
    let stop = false
    let n = 0
    const producing = (async () => {
      while (!stop) {
        const value = `rec-${n++}`
        try {
          const r = await c.request(ApiKeys.Produce, 9, {
            transactionalId: null, acks: -1, timeoutMs: 1000,
            topicData: [{ name: 'crash', partitionData: [{ index: 0, records: makeBatch([{ value }]) }] }],
          })
          if (r.responses[0].partitionResponses[0].errorCode === 0) acked.push(value)
        } catch {
          return // the connection died with the broker
        }
      }
    })()
    await new Promise((r) => setTimeout(r, 700))
    child.kill('SIGKILL')
    stop = true
    await producing
    c.close()
    expect(acked.length).toBeGreaterThan(20)

    ;({ child, port } = await launch(dataDir, ['--segment-bytes', '4096']))
    c = await RawClient.connect(port)
    let got = await readAll(c, 'crash')
    expect(got.offsets).toEqual(got.offsets.map((_, i) => BigInt(i)))
    expect(got.values.slice(0, acked.length)).toEqual(acked)
    const total = got.offsets.length
    c.close()
    child.kill('SIGKILL')
    await new Promise((r) => child.once('exit', r))

    // Damage: cut the active segment mid-batch, and put garbage after an older one.
    const dir = join(dataDir, 'crash-0')
    // The newest segment with data (a crash right after a roll leaves an empty one last).
    const logs = readdirSync(dir).filter((f) => f.endsWith('.log') && statSync(join(dir, f)).size > 0).sort()
    expect(logs.length).toBeGreaterThan(2)
    const active = join(dir, logs[logs.length - 1]!)
    truncateSync(active, statSync(active).size - 7)
    appendFileSync(join(dir, logs[0]!), Buffer.from('garbage that is not a record batch at all'))

    ;({ child, port } = await launch(dataDir, ['--segment-bytes', '4096']))
    c = await RawClient.connect(port)
    got = await readAll(c, 'crash')
    expect(got.offsets).toEqual(got.offsets.map((_, i) => BigInt(i)))
    // Only the cut batch (one record) is gone.
    expect(got.offsets.length).toBe(total - 1)
    const r = await c.request(ApiKeys.Produce, 9, {
      transactionalId: null, acks: -1, timeoutMs: 1000,
      topicData: [{ name: 'crash', partitionData: [{ index: 0, records: makeBatch([{ value: 'after' }]) }] }],
    })
    expect(r.responses[0].partitionResponses[0]).toMatchObject({ errorCode: 0, baseOffset: BigInt(total - 1) })
    got = await readAll(c, 'crash')
    expect(got.values[got.values.length - 1]).toBe('after')
    c.close()
  })
})
