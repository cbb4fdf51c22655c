// Which Node binary runs each client's child process, and where a client that is not in the
// workspace comes from. @platformatic/kafka 2.x needs Node >= 22, so it runs on the cached Node
// 22 binary, and so does `tidelog-node22` (the same tidelog adapter) to compare them on one
// runtime; every other client runs on the Node that runs the bench (20 here).
import { execFileSync, spawnSync } from 'node:child_process'
import { confluent, node22, packageVersion, platformatic2 } from '../env/peers.js'
import type { NodeClient } from './jobs.js'

export interface Runtime {
  /** The Node binary of the child process. */
  node: string
  /** Environment for the child: BENCH_PEER_DIR is the package directory of a cached peer. */
  env: Record<string, string>
}

/** The clients whose child runs on Node 22. */
const ON_NODE22 = new Set<NodeClient>(['platformatic-2', 'tidelog-node22'])

const peerDir: Partial<Record<NodeClient, () => Promise<string>>> = {
  'platformatic-2': platformatic2,
  confluent,
}

const cache = new Map<NodeClient, Promise<Runtime>>()

async function resolveRuntime(client: NodeClient): Promise<Runtime> {
  const node = ON_NODE22.has(client) ? await node22() : process.execPath
  const dir = await peerDir[client]?.()
  return { node, env: dir === undefined ? {} : { BENCH_PEER_DIR: dir } }
}

/** Installs what the client needs on first use (a failure rejects every run of that client). */
export function runtimeOf(client: NodeClient): Promise<Runtime> {
  let r = cache.get(client)
  if (r === undefined) {
    r = resolveRuntime(client)
    cache.set(client, r)
  }
  return r
}

const versions = new Map<string, string>()

/** `node --version` of a binary, without the v. */
export function nodeVersionOf(node: string): string {
  let v = versions.get(node)
  if (v === undefined) {
    v = node === process.execPath ? process.versions.node : execFileSync(node, ['--version'], { encoding: 'utf8' }).trim().replace(/^v/, '')
    versions.set(node, v)
  }
  return v
}

/** "tidelog: Node 20.20.2, platformatic-2: Node 22.23.3 (@platformatic/kafka 2.12.1)" for the clients that ran. */
export async function runtimeNote(clients: readonly string[]): Promise<string> {
  const parts: string[] = []
  for (const c of clients) {
    if (c === 'java') {
      parts.push(`java: ${javaVersion()}`)
      continue
    }
    try {
      const r = await runtimeOf(c as NodeClient)
      const dir = r.env.BENCH_PEER_DIR
      parts.push(`${c}: Node ${nodeVersionOf(r.node)}${dir === undefined ? '' : ` (${dir.split('node_modules/')[1]} ${packageVersion(dir)})`}`)
    } catch {
      parts.push(`${c}: not installed`)
    }
  }
  return `runtimes: ${parts.join(', ')}`
}

let java: string | undefined
/** The JVM's runtime version (`java -XshowSettings:properties` prints it on stderr). */
export function javaVersion(): string {
  if (java === undefined) {
    const out = spawnSync('java', ['-XshowSettings:properties', '-version'], { encoding: 'utf8' }).stderr ?? ''
    const m = /java\.runtime\.version = (\S+)/.exec(out)
    java = m === null ? 'unknown JVM' : `JVM ${m[1]}`
  }
  return java
}
