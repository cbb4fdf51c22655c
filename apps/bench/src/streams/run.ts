// One timed streams run: the output reader is fetching before the program starts; the clock
// runs from the program's STARTING line (printed just before start(), after module or class
// loading) until the reader has seen the last expected output record.
import { spawn, type ChildProcess } from 'node:child_process'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Admin } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import { fetchKafkaStreams, STREAMS_VERSION } from '../../../../test/streams-java/golden.js'
import { stopProcess, type BrokerHandle } from '../env/brokers.js'
import type { StreamsArgs } from './shape.js'

export type StreamsImpl = 'tidelog' | 'java'

const APP = fileURLToPath(new URL('./app.ts', import.meta.url))
const JAVA_SOURCE = fileURLToPath(new URL('../../java/StreamsBench.java', import.meta.url))
const javaBin = (tool: 'java' | 'javac') => (process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', tool) : tool)

let compiled: Promise<{ libs: string; out: string }> | undefined
/** StreamsBench.java compiled once per bench process against the Kafka Streams jars. */
function compileBench(): Promise<{ libs: string; out: string }> {
  compiled ??= (async () => {
    const libs = await fetchKafkaStreams(STREAMS_VERSION)
    const out = mkdtempSync(join(tmpdir(), 'tidelog-bench-streams-javac-'))
    await promisify(execFile)(javaBin('javac'), ['-nowarn', '-cp', `${libs}/*`, '-d', out, JAVA_SOURCE], { timeout: 180_000 })
    return { libs, out }
  })()
  compiled.catch(() => (compiled = undefined))
  return compiled
}

async function launch(impl: StreamsImpl, a: StreamsArgs): Promise<ChildProcess> {
  if (impl === 'tidelog') {
    // With BENCH_CPU_PROF=DIR, as the client processes: a folder of V8 profiles per run (tsx's hook thread writes one too; the largest is the app's).
    const prof = process.env.BENCH_CPU_PROF
    const profArgs = prof === undefined || prof === '' ? [] : ['--cpu-prof', `--cpu-prof-dir=${join(prof, `${a.appId}.d`)}`]
    return spawn(process.execPath, [...profArgs, '--import', import.meta.resolve('tsx'), APP, JSON.stringify(a)], { stdio: ['ignore', 'pipe', 'pipe'] })
  }
  const { libs, out } = await compileBench()
  const args = [a.scenario, a.bootstrap, a.appId, a.input, a.output, a.table ?? '-', a.stateDir, String(a.commitIntervalMs)]
  return spawn(javaBin('java'), ['-Xms256m', '-Xmx1g', '-cp', `${out}:${libs}/*`, 'StreamsBench', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
}

/** Counts what arrives on all partitions of `topic` from offset 0, checking each batch's first record. */
function reader(b: BrokerHandle, topic: string, partitions: number, expected: number, check: (key: Buffer | null, value: Buffer | null) => string | undefined) {
  const c = new Consumer({ brokers: [b.bootstrap], clientId: 'tidelog-bench-streams-reader', autoOffsetReset: 'earliest', autoCommit: false, fetchMaxWaitMs: 100 })
  c.assign(Array.from({ length: partitions }, (_, partition) => ({ topic, partition })))
  let count = 0
  let first = NaN
  const done = (async () => {
    for await (const batch of c.batches()) {
      const m = batch.messages[0]
      if (m === undefined) continue
      if (Number.isNaN(first)) first = performance.now()
      const bad = check(m.key, m.value)
      if (bad !== undefined) throw new Error(`unexpected output record on ${topic}: ${bad}`)
      count += batch.messages.length
      if (count >= expected) return { at: performance.now(), first, count }
    }
    throw new Error(`reader of ${topic} ended after ${count} of ${expected} records`)
  })()
  // Awaited later (in a race with the program); a failure before then must not go unhandled.
  done.catch(() => undefined)
  return { done, close: () => c.close(), count: () => count }
}

async function deleteTopicsWithPrefix(b: BrokerHandle, prefixes: string[]): Promise<void> {
  const admin = new Admin({ brokers: [b.bootstrap], clientId: 'tidelog-bench-admin' })
  try {
    const names = (await admin.listTopics()).filter((t) => prefixes.some((p) => t.startsWith(p)))
    if (names.length > 0) await admin.deleteTopics(names)
  } catch {
    // Best effort: the topics only take disk space.
  } finally {
    await admin.close()
  }
}

export interface StreamsRunResult {
  /** Input records per second, from STARTING to the last output read. */
  rate: number
  /** ms from STARTING to the first output record (group join, internal topics, restore). */
  firstMs: number
}

/**
 * Runs one program on `b` over the pre-produced `input` until `expected` records reached
 * `a.output` (created by the caller), then stops it and deletes its output and internal topics.
 */
export async function streamsOnce(
  impl: StreamsImpl,
  b: BrokerHandle,
  a: Omit<StreamsArgs, 'stateDir' | 'bootstrap'>,
  inputRecords: number,
  expected: number,
  partitions: number,
  check: (key: Buffer | null, value: Buffer | null) => string | undefined,
  timeoutMs: number,
): Promise<StreamsRunResult> {
  const stateDir = mkdtempSync(join(tmpdir(), 'tidelog-bench-streams-state-'))
  const r = reader(b, a.output, partitions, expected, check)
  let proc: ChildProcess | undefined
  try {
    proc = await launch(impl, { ...a, bootstrap: b.bootstrap, stateDir })
    const p = proc
    let err = ''
    p.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)))
    const started = await new Promise<number>((resolve, reject) => {
      let out = ''
      p.stdout!.on('data', (d: Buffer) => {
        out += d.toString()
        const e = /^ERROR (.*)$/m.exec(out)
        if (e !== null) reject(new Error(`${impl} streams: ${e[1]}`))
        if (/^STARTING$/m.test(out)) resolve(performance.now())
      })
      p.once('exit', (code) => reject(new Error(`${impl} streams exited with ${code}: ${err.trim().split('\n').slice(-2).join(' | ')}`)))
    })
    // A failure of the program (its ERROR line or exit) ends the wait as the reader's end does.
    const failed = new Promise<never>((_, reject) => {
      p.stdout!.on('data', (d: Buffer) => {
        const e = /^ERROR (.*)$/m.exec(d.toString())
        if (e !== null) reject(new Error(`${impl} streams: ${e[1]}`))
      })
      p.once('exit', (code) => reject(new Error(`${impl} streams exited with ${code} after ${r.count()} of ${expected} output records: ${err.trim().split('\n').slice(-2).join(' | ')}`)))
    })
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${impl} streams: ${r.count()} of ${expected} output records after ${timeoutMs} ms`)), timeoutMs)
    })
    try {
      const end = await Promise.race([r.done, failed, timeout])
      return { rate: inputRecords / ((end.at - started) / 1000), firstMs: end.first - started }
    } finally {
      clearTimeout(timer)
      failed.catch(() => undefined)
    }
  } finally {
    if (proc !== undefined) await stopProcess(proc, 30_000)
    await r.close()
    await r.done.catch(() => undefined)
    rmSync(stateDir, { recursive: true, force: true })
    await deleteTopicsWithPrefix(b, [a.appId, a.output])
  }
}
