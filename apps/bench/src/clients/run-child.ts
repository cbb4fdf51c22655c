import { spawn } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Job, JobResult } from './jobs.js'

const CHILD = fileURLToPath(new URL('./child.ts', import.meta.url))

/**
 * With BENCH_CPU_PROF=DIR every client process writes a V8 CPU profile there
 * (`node --cpu-prof`), named after the client, the job, the broker's port and the topic.
 */
function profileArgs(job: Job): string[] {
  const dir = process.env.BENCH_CPU_PROF
  if (dir === undefined || dir === '') return []
  mkdirSync(dir, { recursive: true })
  return ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${job.client}-${job.kind}-${job.bootstrap.split(':').pop()}-${job.topic}.cpuprofile`]
}

/** Runs one job in a fresh Node process and returns what it measured. */
export function runChild<T extends JobResult>(job: Job, timeoutMs: number): Promise<T> {
  return new Promise((resolve, reject) => {
    // tsx compiles the child's TypeScript; the packages it measures come from their builds.
    const tsx = import.meta.resolve('tsx')
    const child = spawn(process.execPath, [...profileArgs(job), '--import', tsx, CHILD, JSON.stringify(job)], {
      stdio: ['ignore', 'pipe', 'pipe'],
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
      const lines = out.trim().split('\n')
      const last = lines[lines.length - 1] ?? ''
      if (code === 0 && last.startsWith('RESULT ')) return resolve(JSON.parse(last.slice(7)) as T)
      if (last.startsWith('ERROR ')) return reject(new Error(last.slice(6)))
      const why = signal === 'SIGKILL' ? `timed out after ${timeoutMs} ms` : `exited with ${code ?? signal}`
      reject(new Error(`${job.client} ${job.kind} ${why}: ${err.trim().split('\n').slice(-3).join(' | ')}`))
    })
  })
}
