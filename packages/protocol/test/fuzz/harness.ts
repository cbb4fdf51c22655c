import { getHeapStatistics } from 'node:v8'
import { Worker } from 'node:worker_threads'
import { TidelogError } from '@tidelog/protocol'
import { Prng, baseSeed, seedFor } from './prng.js'

/** A decoder under fuzz and where its inputs come from. */
export interface FuzzTarget {
  /** Unique name; also derives the target's seed. */
  name: string
  iterations: number
  /** The i-th input (deterministic given the PRNG state). */
  input(rng: Prng, i: number): Buffer
  /** Decodes the input; whatever it throws is checked. */
  run(input: Buffer): void
  /** Which errors are acceptable (default: any TidelogError). */
  allowed?: (e: unknown) => boolean
  /** The per-input time limit (default MAX_MS_PER_INPUT); the harness's own tests of other limits raise it. */
  maxMsPerInput?: number
}

export interface FuzzStats {
  name: string
  seed: number
  inputs: number
  /** Inputs that decoded without an error. */
  decoded: number
  /** Inputs rejected with an allowed (typed) error. */
  rejected: number
  inputBytes: number
  maxMs: number
  /** Largest growth of external (ArrayBuffer) memory across one decode, in bytes. */
  maxExternalGrowth: number
  /** Largest growth of the JS heap across one decode, in bytes. */
  maxHeapGrowth: number
}

/**
 * Per-input limits. Time is generous because a GC pause, or the other test file sharing CI's two
 * cores, can land on any input (250 ms was seen to be hit that way); a decoder that is really
 * slow on hostile input (quadratic, unbounded) takes seconds.
 */
export const MAX_MS_PER_INPUT = 1000
const externalLimit = (n: number): number => 1024 * 1024 + 8 * n
const heapLimit = (n: number): number => 16 * 1024 * 1024 + 512 * n

const isTyped = (e: unknown): boolean => e instanceof TidelogError

function hex(b: Buffer): string {
  return b.length <= 512 ? b.toString('hex') : `${b.subarray(0, 512).toString('hex')}... (${b.length} bytes)`
}

class FuzzFailure extends Error {}

/**
 * Runs one target. Fails (throws) on the first input that throws anything but an
 * allowed error, takes longer than MAX_MS_PER_INPUT, or grows memory beyond what
 * its size justifies; the message carries the seed and input for replay.
 */
export function fuzz(target: FuzzTarget): FuzzStats {
  const base = baseSeed()
  const seed = seedFor(target.name, base)
  const rng = new Prng(seed)
  const allowed = target.allowed ?? isTyped
  const stats: FuzzStats = {
    name: target.name,
    seed,
    inputs: 0,
    decoded: 0,
    rejected: 0,
    inputBytes: 0,
    maxMs: 0,
    maxExternalGrowth: 0,
    maxHeapGrowth: 0,
  }
  const where = (i: number, input: Buffer): string =>
    `fuzz target "${target.name}", input #${i} (replay: FUZZ_SEED=${base}; target seed ${seed})\ninput: ${hex(input)}`
  watchdog.begin(`target "${target.name}" (FUZZ_SEED=${base})`)
  // Capturing a stack costs more than decoding a small input, and nearly every
  // input throws; stacks are recaptured for the one input that fails.
  const stackLimit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    // One heap sample and one clock read per input: the previous input's closing
    // reading opens the next. Input generation in between allocates only a few
    // bytes, so nothing it does can be mistaken for a decoder's allocation.
    let h0 = getHeapStatistics()
    let t0 = performance.now()
    for (let i = 0; i < target.iterations; i++) {
      const input = target.input(rng, i)
      watchdog.beat(i)
      try {
        target.run(input)
        stats.decoded++
      } catch (e) {
        if (!allowed(e)) {
          Error.stackTraceLimit = stackLimit
          const again = rerun(target, input) ?? e
          const detail = again instanceof Error ? (again.stack ?? again.message) : String(again)
          throw new FuzzFailure(`untyped error from ${where(i, input)}\n${detail}`, { cause: again })
        }
        stats.rejected++
      }
      const t1 = performance.now()
      const h1 = getHeapStatistics()
      const ms = t1 - t0
      const ext = h1.external_memory - h0.external_memory
      const heap = h1.used_heap_size - h0.used_heap_size
      h0 = h1
      t0 = t1
      if (ms > stats.maxMs) stats.maxMs = ms
      if (ext > stats.maxExternalGrowth) stats.maxExternalGrowth = ext
      if (heap > stats.maxHeapGrowth) stats.maxHeapGrowth = heap
      if (ms > (target.maxMsPerInput ?? MAX_MS_PER_INPUT)) throw new FuzzFailure(`${ms.toFixed(1)} ms for one input: ${where(i, input)}`)
      if (ext > externalLimit(input.length)) {
        throw new FuzzFailure(`decode grew external memory by ${ext} bytes for a ${input.length}-byte input: ${where(i, input)}`)
      }
      if (heap > heapLimit(input.length)) {
        throw new FuzzFailure(`decode grew the heap by ${heap} bytes for a ${input.length}-byte input: ${where(i, input)}`)
      }
      stats.inputs++
      stats.inputBytes += input.length
    }
  } finally {
    Error.stackTraceLimit = stackLimit
    watchdog.end()
  }
  if (process.env.FUZZ_VERBOSE) {
    console.log(
      `${stats.name}: ${stats.inputs} inputs (${stats.inputBytes} bytes), ${stats.decoded} decoded, ${stats.rejected} rejected; ` +
        `max ${stats.maxMs.toFixed(2)} ms, +${stats.maxExternalGrowth} external, +${stats.maxHeapGrowth} heap per input`,
    )
  }
  return stats
}

function rerun(target: FuzzTarget, input: Buffer): unknown {
  try {
    target.run(input)
  } catch (e) {
    return e
  }
  return undefined
}

/**
 * A decoder stuck in a loop blocks the event loop, so no timer in this thread can
 * notice. A watchdog thread watches a shared heartbeat instead and, when it stops
 * moving, reports the target and input number and kills the test process.
 */
const WATCHDOG_MS = 15_000
const WATCHDOG_SOURCE = `
const { workerData } = require('node:worker_threads')
const { writeSync } = require('node:fs')
const beat = new Int32Array(workerData.beat)
const info = new Uint8Array(workerData.info)
let last = -1
let since = Date.now()
setInterval(() => {
  const v = Atomics.load(beat, 0)
  if (Atomics.load(beat, 1) === 0 || v !== last) { last = v; since = Date.now(); return }
  if (Date.now() - since < workerData.limitMs) return
  const text = Buffer.from(info.subarray(0, Atomics.load(beat, 2))).toString()
  writeSync(2, '\\n[fuzz watchdog] no progress for ' + workerData.limitMs + ' ms in ' + text + ' at input #' + v + '\\n')
  process.kill(process.pid, 'SIGKILL')
}, 200)
`

class Watchdog {
  private worker: Worker | undefined
  private readonly beatBuf = new SharedArrayBuffer(12)
  private readonly beats = new Int32Array(this.beatBuf)
  private readonly infoBuf = new SharedArrayBuffer(1024)

  begin(label: string): void {
    if (this.worker === undefined) {
      this.worker = new Worker(WATCHDOG_SOURCE, {
        eval: true,
        workerData: { beat: this.beatBuf, info: this.infoBuf, limitMs: WATCHDOG_MS },
      })
      this.worker.unref()
    }
    const text = Buffer.from(label).subarray(0, 1024)
    new Uint8Array(this.infoBuf).set(text)
    Atomics.store(this.beats, 2, text.length)
    Atomics.store(this.beats, 0, -1)
    Atomics.store(this.beats, 1, 1)
  }

  beat(i: number): void {
    Atomics.store(this.beats, 0, i)
  }

  end(): void {
    Atomics.store(this.beats, 1, 0)
  }

  async stop(): Promise<void> {
    const w = this.worker
    this.worker = undefined
    if (w !== undefined) await w.terminate()
  }
}

export const watchdog = new Watchdog()

/** How many inputs per target: FUZZ_SCALE multiplies (e.g. 10 for a long local run). */
export function iterations(n: number): number {
  const s = Number(process.env.FUZZ_SCALE ?? '1')
  return Math.max(1, Math.round(n * (Number.isFinite(s) && s > 0 ? s : 1)))
}
