import { spawn } from 'node:child_process'
import { mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Job, JobResult } from './jobs.js'
import { runtimeOf } from './runtimes.js'

const CHILD = fileURLToPath(new URL('./child.ts', import.meta.url))

/**
 * With BENCH_CPU_PROF=DIR every client process writes a V8 CPU profile there (`node
 * --cpu-prof`), named after the client, the job, the broker's port and the topic. tsx's module
 * hooks run on a thread of their own, which writes a profile too: each process gets a folder,
 * and the main thread's profile (the largest) is kept.
 */
function profileDir(job: Job): { args: string[]; keep(): void } {
  const dir = process.env.BENCH_CPU_PROF
  if (dir === undefined || dir === '') return { args: [], keep: () => undefined }
  const name = `${job.client}-${job.kind}-${job.bootstrap.split(':').pop()}-${job.topic}`
  const tmp = join(dir, `${name}.d`)
  mkdirSync(tmp, { recursive: true })
  return {
    args: ['--cpu-prof', `--cpu-prof-dir=${tmp}`],
    keep() {
      const files = readdirSync(tmp).map((f) => join(tmp, f))
      const main = files.sort((a, b) => statSync(b).size - statSync(a).size)[0]
      if (main !== undefined) renameSync(main, join(dir, `${name}.cpuprofile`))
      rmSync(tmp, { recursive: true, force: true })
    },
  }
}

/** Runs one job in a fresh Node process and returns what it measured. */
export async function runChild<T extends JobResult>(job: Job, timeoutMs: number): Promise<T> {
  const runtime = await runtimeOf(job.client)
  return new Promise((resolve, reject) => {
    // tsx compiles the child's TypeScript; the packages it measures come from their builds.
    const tsx = import.meta.resolve('tsx')
    const prof = profileDir(job)
    const child = spawn(runtime.node, [...prof.args, '--import', tsx, CHILD, JSON.stringify(job)], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...runtime.env },
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString()
      if (err.length > 100_000) err = err.slice(-50_000)
    })
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
    }, timeoutMs)
    child.once('error', reject)
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      prof.keep()
      const lines = out.trim().split('\n')
      const last = lines[lines.length - 1] ?? ''
      if (code === 0 && last.startsWith('RESULT ')) return resolve(JSON.parse(last.slice(7)) as T)
      if (last.startsWith('ERROR ')) return reject(new Error(last.slice(6)))
      const why = signal === 'SIGKILL' ? `timed out after ${timeoutMs} ms` : `exited with ${code ?? signal}`
      reject(new Error(`${job.client} ${job.kind} ${why}: ${err.trim().split('\n').slice(-3).join(' | ')}`))
    })
  })
}
