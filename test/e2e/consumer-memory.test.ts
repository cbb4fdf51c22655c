import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { Consumer } from '@tidelog/consumer'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TestProducer } from '../../packages/consumer/test/helpers/produce.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const MAIN = join(ROOT, 'apps/broker/src/main.ts')
// Like the test's own imports, the broker process runs from sources, not from a build.
const SOURCES = join(ROOT, 'packages/consumer/test/helpers/tsconfig.sources.json')

// A forced GC before each sample measures what is live, not what is waiting to be collected.
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

let child: ChildProcess
let dataDir: string
let brokers: string[]

// The broker runs in its own process, so this process's memory is the consumer's alone.
beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tidelog-consumer-memory-'))
  child = spawn(process.execPath, ['--import', 'tsx', MAIN, '--port', '0', '--data-dir', dataDir, '--num-partitions', '6', '--log-level', 'error'], {
    cwd: ROOT,
    env: { ...process.env, TSX_TSCONFIG_PATH: SOURCES },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const ready = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      if (out.includes('\n')) resolve(out)
    })
    child.once('exit', (code) => reject(new Error(`broker exited with ${code}`)))
  })
  brokers = [`127.0.0.1:${/:(\d+) /.exec(ready)![1]}`]
}, 60_000)

afterAll(async () => {
  if (child !== undefined && child.exitCode === null) {
    const exited = new Promise((r) => child.once('exit', r))
    child.kill('SIGTERM')
    await exited
  }
  rmSync(dataDir, { recursive: true, force: true })
})

describe('bounded memory', () => {
  it('a slow handler reading 128 MiB keeps the buffer within maxBufferedBytes plus one response, and the heap flat', async () => {
    const producer = new TestProducer(brokers)
    const records = 128 * 1024
    await producer.fill('big', 6, records, { perBatch: 128, valueBytes: 1000 })
    await producer.close()

    const limit = 4 * 1024 * 1024
    const settle = async (): Promise<NodeJS.MemoryUsage> => {
      // Backing stores of collected ArrayBuffers are freed on a background thread: give it a turn.
      gc()
      await new Promise((r) => setTimeout(r, 20))
      gc()
      return process.memoryUsage()
    }
    const before = await settle()
    const consumer = new Consumer({ brokers, autoOffsetReset: 'earliest', maxBufferedBytes: limit, maxPartitionFetchBytes: 512 * 1024 })
    consumer.assign([0, 1, 2, 3, 4, 5].map((partition) => ({ topic: 'big', partition })))
    let peak = 0
    let bytes = 0
    let n = 0
    const base = before.heapUsed + before.arrayBuffers
    const sample = async (): Promise<void> => {
      const m = await settle()
      peak = Math.max(peak, m.heapUsed + m.arrayBuffers - base)
    }
    for await (const m of consumer) {
      bytes += m.value!.length
      // The handler: slower than the fetcher, so the buffer fills up and stays full.
      if (++n % 256 === 0) await new Promise((r) => setTimeout(r, 1))
      if (n % 8192 === 0) await sample()
      if (n === records) break
    }
    await consumer.close()
    expect(bytes).toBeGreaterThan(128 * 1000 * 1024 - 1)
    // One response goes over the limit by at most the first batch it returns whole (KIP-74).
    const oneBatch = 128 * 1100
    expect(consumer.peakBufferedBytes).toBeGreaterThan(limit / 2)
    expect(consumer.peakBufferedBytes).toBeLessThanOrEqual(limit + oneBatch)
    // Live memory: the buffer, the response arriving (at most the room left, so at most the
    // limit) and a fixed overhead; nothing that grows with the 128 MiB read.
    expect(peak).toBeLessThan(2 * limit + 8 * 1024 * 1024)
    console.log(`peak buffered ${(consumer.peakBufferedBytes / 2 ** 20).toFixed(2)} MiB, peak live growth ${(peak / 2 ** 20).toFixed(1)} MiB`)
  }, 120_000)
})
