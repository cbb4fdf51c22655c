import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable, Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { type Broker, startBroker, type BrokerOptions } from '@tidelog/broker'
import { run } from '../src/cli.js'

const pkg = fileURLToPath(new URL('..', import.meta.url))
export const BIN = join(pkg, 'dist', 'bin.js')

function newest(dir: string): number {
  let t = 0
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs)
  }
  return t
}

/**
 * The tests run the built command as a person would (`node dist/bin.js`: a tsx start costs a
 * second per spawn); a build older than src/ is rebuilt first, so they never test stale code.
 */
export function ensureBuilt(): void {
  let built = 0
  try {
    built = statSync(BIN).mtimeMs
  } catch {
    // not built yet
  }
  if (built >= newest(join(pkg, 'src'))) return
  // Test files run in parallel: one builds, the others wait for it (tsup empties dist/ first).
  const lock = join(pkg, '.build-lock')
  try {
    mkdirSync(lock)
  } catch {
    // A lock left by a run killed mid-build is stale after a minute.
    if ((statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Infinity) < Date.now() - 60_000) {
      rmSync(lock, { recursive: true, force: true })
      return ensureBuilt()
    }
    const until = Date.now() + 120_000
    while (existsSync(lock) && Date.now() < until) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100)
    return
  }
  try {
    execFileSync('npx', ['tsup'], { cwd: pkg, stdio: 'ignore' })
  } finally {
    rmSync(lock, { recursive: true, force: true })
  }
}

export interface Result {
  code: number | null
  stdout: string
  stderr: string
}

export interface Running {
  child: ChildProcess
  /** stdout so far. */
  stdout(): string
  done: Promise<Result>
}

type SpawnOptions = { input?: string | Buffer; env?: Record<string, string>; configHome?: string; keepStdinOpen?: boolean }

/** Starts `tidelog ...args` with no TIDELOG_* from the caller and its own config dir; stdin gets `input`, then EOF. */
export function start(args: string[], options: SpawnOptions = {}): Running {
  const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TIDELOG_')))
  env.XDG_CONFIG_HOME = options.configHome ?? join(tmpdir(), 'tidelog-cli-test-no-config')
  Object.assign(env, options.env)
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] })
  const out: Buffer[] = []
  const err: Buffer[] = []
  child.stdout!.on('data', (c: Buffer) => out.push(c))
  child.stderr!.on('data', (c: Buffer) => err.push(c))
  const done = new Promise<Result>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }))
  })
  if (options.keepStdinOpen !== true) child.stdin!.end(options.input ?? '')
  return { child, stdout: () => Buffer.concat(out).toString(), done }
}

/** Runs `tidelog ...args` to its end. */
export function tidelog(args: string[], options: SpawnOptions = {}): Promise<Result> {
  return start(args, options).done
}

/** run() inside the test process, with stdin from `input` and the output collected. */
export async function inProcess(args: string[], input = ''): Promise<Result> {
  const out: Buffer[] = []
  const err: Buffer[] = []
  const sink = (into: Buffer[]) => new Writable({ write: (c: Buffer, _e, cb) => (into.push(Buffer.from(c)), cb()) })
  const code = await run(args, { stdin: Readable.from([Buffer.from(input)]), stdout: sink(out), stderr: sink(err), env: { XDG_CONFIG_HOME: join(tmpdir(), 'tidelog-cli-test-no-config') }, signal: new AbortController().signal })
  return { code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }
}

export interface TestBroker {
  broker: Broker
  bootstrap: string
  dataDir: string
  /** `tidelog` with `-b` pointing at this broker. */
  run(args: string[], options?: Parameters<typeof tidelog>[1]): Promise<Result>
  /** The same, in-process (no spawn): for checks of logic whose process behaviour other tests cover. */
  call(args: string[], input?: string): Promise<Result>
  close(): Promise<void>
}

export async function testBroker(options: Partial<BrokerOptions> = {}): Promise<TestBroker> {
  ensureBuilt()
  const dataDir = mkdtempSync(join(tmpdir(), 'tidelog-cli-'))
  const broker = await startBroker({ port: 0, dataDir, logLevel: 'error', ...options })
  const bootstrap = `127.0.0.1:${broker.port}`
  return {
    broker,
    bootstrap,
    dataDir,
    run: (args, o) => tidelog([...args, '-b', bootstrap], o),
    call: (args, input) => inProcess([...args, '-b', bootstrap], input),
    async close() {
      await broker.close()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}
