/**
 * Kafka Streams' own TopologyTestDriver with record caches on: compiles CacheTopologies.java (with
 * GoldenDriver.java) against the cached Kafka Streams jars (see golden.ts) and runs it on
 * packages/streams/test/golden/cache-inputs.json. Rewrite the checked-in outputs with
 * `node --import tsx test/streams-java/cache.ts`.
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

export const CACHE_INPUTS = fileURLToPath(new URL('../../packages/streams/test/golden/cache-inputs.json', import.meta.url))
export const CACHE_GOLDEN = fileURLToPath(new URL('../../packages/streams/test/golden/cache-java-outputs.json', import.meta.url))

const java = (tool: 'java' | 'javac') => (process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', tool) : tool)

export async function runJavaCache(version: string = STREAMS_VERSION): Promise<string> {
  const libs = await fetchKafkaStreams(version)
  const out = mkdtempSync(join(tmpdir(), 'tidelog-streams-cache-javac-'))
  const sources = ['GoldenDriver.java', 'CacheTopologies.java'].map((f) => join(here, f))
  await run(java('javac'), ['-J-XX:TieredStopAtLevel=1', '-nowarn', '-cp', `${libs}/*`, '-d', out, ...sources], { timeout: 180_000 })
  const { stdout } = await run(java('java'), ['-Xmx384m', '-XX:TieredStopAtLevel=1', '-cp', `${out}:${libs}/*`, 'CacheTopologies', CACHE_INPUTS], { timeout: 180_000, maxBuffer: 16 * 1024 * 1024 })
  return stdout
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(CACHE_GOLDEN, await runJavaCache())
  console.log(`wrote ${CACHE_GOLDEN}`)
}
