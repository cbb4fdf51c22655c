import { getPriority, setPriority } from 'node:os'
import { parentPort } from 'node:worker_threads'
import { type CleanJob, CleanSession, type GroupRequest } from './clean-work.js'

// The log cleaner's worker thread: it holds one CleanSession per log being cleaned and
// answers the broker thread's calls (worker-client.ts) one message at a time.

export type WorkerCall =
  | { id: number; op: 'begin'; session: number; job: CleanJob }
  | { id: number; op: 'group'; session: number; group: GroupRequest }
  | { id: number; op: 'end'; session: number }

export type WorkerReply = { id: number; result: unknown } | { id: number; error: { name: string; message: string; code?: string } }

const port = parentPort
if (port === null) throw new Error('cleaner-worker.ts runs as a worker thread')
const sessions = new Map<number, CleanSession>()

// On Linux a nice value belongs to the thread (setpriority on "process" 0 is the calling
// thread), so the cleaner yields the CPU to the broker's event loop when cores are scarce,
// as a background job should. Elsewhere it would renice the whole broker: left alone.
if (process.platform === 'linux') {
  try {
    setPriority(0, Math.min(19, getPriority(0) + 10))
  } catch {
    // Not allowed here (a sandbox): the cleaner runs at the broker's priority.
  }
}

function sessionOf(id: number): CleanSession {
  const s = sessions.get(id)
  if (s === undefined) throw new Error(`no cleaning session ${id}`)
  return s
}

async function run(call: WorkerCall): Promise<unknown> {
  switch (call.op) {
    case 'begin': {
      const s = new CleanSession(call.job)
      sessions.set(call.session, s)
      return s.buildMap()
    }
    case 'group':
      return sessionOf(call.session).cleanGroup(call.group)
    case 'end':
      sessions.delete(call.session)
      return undefined
  }
}

port.on('message', (call: WorkerCall) => {
  run(call).then(
    (result) => port.postMessage({ id: call.id, result } satisfies WorkerReply),
    (err: unknown) => {
      const e = err instanceof Error ? err : new Error(String(err))
      const code = (e as NodeJS.ErrnoException).code
      port.postMessage({ id: call.id, error: { name: e.name, message: e.message, ...(typeof code === 'string' ? { code } : {}) } } satisfies WorkerReply)
    },
  )
})
