/**
 * Kafka Streams' own TopologyTestDriver on windows, suppression and stream-stream joins:
 * compiles WindowTopologies.java against the cached Kafka Streams jars (see golden.ts) and runs
 * it on packages/streams/test/golden/windows-inputs.json. Used by the interop test (the checked-in
 * windows-java-outputs.json must be what Java prints) and by regenerate-windows.ts.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { fetchKafkaStreams, STREAMS_VERSION } from './golden.js'

const run = promisify(execFile)
const here = fileURLToPath(new URL('.', import.meta.url))

export const WINDOWS_INPUTS = fileURLToPath(new URL('../../packages/streams/test/golden/windows-inputs.json', import.meta.url))
export const WINDOWS_GOLDEN = fileURLToPath(new URL('../../packages/streams/test/golden/windows-java-outputs.json', import.meta.url))

const java = (tool: 'java' | 'javac') => (process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', tool) : tool)

export async function runJavaWindows(version: string = STREAMS_VERSION): Promise<{ stdout: string; libs: string }> {
  const libs = await fetchKafkaStreams(version)
  const out = mkdtempSync(join(tmpdir(), 'tidelog-streams-windows-javac-'))
  await run(java('javac'), ['-J-XX:TieredStopAtLevel=1', '-nowarn', '-cp', `${libs}/*`, '-d', out, join(here, 'WindowTopologies.java')], { timeout: 180_000 })
  const { stdout } = await run(java('java'), ['-Xmx384m', '-XX:TieredStopAtLevel=1', '-cp', `${out}:${libs}/*`, 'WindowTopologies', WINDOWS_INPUTS], {
    timeout: 180_000,
    maxBuffer: 16 * 1024 * 1024,
  })
  return { stdout, libs }
}
