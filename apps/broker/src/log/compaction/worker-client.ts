import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Worker } from 'node:worker_threads'
import type { CleanJob, GroupRequest, GroupResult, MapResult } from './clean-work.js'
import type { WorkerCall, WorkerReply } from './cleaner-worker.js'

/** How often a waiting call checks whether its log closed or the cleaner stops. */
const CANCEL_POLL_MS = 20

type CallBody = WorkerCall extends infer C ? (C extends WorkerCall ? Omit<C, 'id'> : never) : never

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void }

/** An error the worker answered with, rebuilt with its errno code (ENOENT, ...). */
function rebuild(e: { name: string; message: string; code?: string }): Error {
  const err = new Error(e.message) as NodeJS.ErrnoException
  err.name = e.name
  if (e.code !== undefined) err.code = e.code
  return err
}

export function isCleaningAborted(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === 'CLEANING_ABORTED'
}

/**
 * Where the worker's code is: beside this module once built (tsup emits
 * dist/cleaner-worker.js), or the TypeScript source when the broker runs from
 * its sources (tests, tsx), which the worker then loads through tsx.
 */
function startWorker(): Worker {
  const here = import.meta.url
  // None of the broker process' own Node options (an --input-type, a loader) concern the worker.
  if (!here.endsWith('.ts')) return new Worker(new URL('./cleaner-worker.js', here), { execArgv: [] })
  // From the sources: tsx's loader is registered in the thread before the entry is imported.
  // The ESM build of tsx's API (its package exports map 'tsx/esm/api' there for import).
  const tsx = pathToFileURL(join(dirname(createRequire(here).resolve('tsx/package.json')), 'dist/esm/api/index.mjs')).href
  const entry = new URL('./cleaner-worker.ts', here).href
  return new Worker(`import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}) })`, { eval: true, execArgv: [] })
}

/**
 * The broker thread's side of the cleaner's worker thread (Kafka's cleaner
 * thread): one worker, started on first use and kept, not holding the process
 * open while idle. A call's promise settles with the worker's answer; a worker
 * that dies fails its calls and the next call starts another.
 */
export class CleanerWorker {
  private worker: Worker | undefined
  private readonly pending = new Map<number, Pending>()
  private nextId = 1
  private nextSession = 1

  private ensure(): Worker {
    if (this.worker !== undefined) return this.worker
    const w = startWorker()
    w.on('message', (reply: WorkerReply) => {
      const p = this.pending.get(reply.id)
      if (p === undefined) return
      this.pending.delete(reply.id)
      if (this.pending.size === 0) w.unref()
      if ('error' in reply) p.reject(rebuild(reply.error))
      else p.resolve(reply.result)
    })
    const fail = (err: Error): void => {
      if (this.worker === w) this.worker = undefined
      for (const p of this.pending.values()) p.reject(err)
      this.pending.clear()
    }
    w.on('error', fail)
    w.on('exit', (code) => fail(new Error(`the log cleaner's worker thread exited (code ${code})`)))
    w.unref()
    this.worker = w
    return w
  }

  call<T>(msg: CallBody, cancel?: { check: () => boolean; flag: Int32Array }): Promise<T> {
    const w = this.ensure()
    const id = this.nextId++
    const done = new Promise<T>((resolve, reject) => this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject }))
    w.ref()
    w.postMessage({ ...msg, id })
    if (cancel === undefined) return done
    const poll = setInterval(() => {
      if (!cancel.check()) return
      Atomics.store(cancel.flag, 0, 1)
      Atomics.notify(cancel.flag, 0)
    }, CANCEL_POLL_MS)
    return done.finally(() => clearInterval(poll))
  }

  /** Starts cleaning one log: the worker builds its key map. */
  async begin(job: Omit<CleanJob, 'cancel'>, shouldStop: () => boolean): Promise<{ session: CleanerSession; map: MapResult }> {
    const cancel = new SharedArrayBuffer(4)
    const session = new CleanerSession(this, this.nextSession++, { check: shouldStop, flag: new Int32Array(cancel) })
    try {
      const map = await this.call<MapResult>({ op: 'begin', session: session.id, job: { ...job, cancel } }, session.cancel)
      return { session, map }
    } catch (err) {
      session.end()
      throw err
    }
  }
}

/** One log's cleaning in the worker. */
export class CleanerSession {
  constructor(
    private readonly worker: CleanerWorker,
    readonly id: number,
    readonly cancel: { check: () => boolean; flag: Int32Array },
  ) {}

  group(req: GroupRequest): Promise<GroupResult> {
    return this.worker.call<GroupResult>({ op: 'group', session: this.id, group: req }, this.cancel)
  }

  /** Frees the session's key map in the worker. */
  end(): void {
    this.worker.call({ op: 'end', session: this.id }).catch(() => {})
  }
}

let shared: CleanerWorker | undefined

/** The process' cleaner worker, shared by every broker in it (tests start several). */
export function sharedCleanerWorker(): CleanerWorker {
  shared ??= new CleanerWorker()
  return shared
}
