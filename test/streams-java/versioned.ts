/**
 * Kafka Streams' own TopologyTestDriver on versioned stores and stream-table joins with a grace
 * period: compiles VersionedTopologies.java (with GoldenDriver.java) against the cached Kafka
 * Streams jars (see golden.ts) and runs it on packages/streams/test/golden/versioned-inputs.json.
 * Rewrite the checked-in outputs with `node --import tsx test/streams-java/versioned.ts`.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { fetchKafkaStreams, STREAMS_VERSION } from './golden.js'

const run = promisify(execFile)
const here = fileURLToPath(new URL('.', import.meta.url))

export const VERSIONED_INPUTS = fileURLToPath(new URL('../../packages/streams/test/golden/versioned-inputs.json', import.meta.url))
export const VERSIONED_GOLDEN = fileURLToPath(new URL('../../packages/streams/test/golden/versioned-java-outputs.json', import.meta.url))

const java = (tool: 'java' | 'javac') => (process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', tool) : tool)

export async function runJavaVersioned(version: string = STREAMS_VERSION): Promise<string> {
  const libs = await fetchKafkaStreams(version)
  const out = mkdtempSync(join(tmpdir(), 'tidelog-streams-versioned-javac-'))
  const sources = ['GoldenDriver.java', 'VersionedTopologies.java'].map((f) => join(here, f))
  await run(java('javac'), ['-J-XX:TieredStopAtLevel=1', '-nowarn', '-cp', `${libs}/*`, '-d', out, ...sources], { timeout: 180_000 })
  const { stdout } = await run(java('java'), ['-Xmx384m', '-XX:TieredStopAtLevel=1', '-cp', `${out}:${libs}/*`, 'VersionedTopologies', VERSIONED_INPUTS], { timeout: 180_000, maxBuffer: 16 * 1024 * 1024 })
  return stdout
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(VERSIONED_GOLDEN, await runJavaVersioned())
  console.log(`wrote ${VERSIONED_GOLDEN}`)
}
