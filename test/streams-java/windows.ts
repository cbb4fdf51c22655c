/**
 * Kafka Streams' own TopologyTestDriver on windows, suppression and stream-stream joins:
 * compiles WindowTopologies.java and MoreWindowTopologies.java against the cached Kafka Streams jars (see golden.ts) and runs
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
export const WINDOWS2_INPUTS = fileURLToPath(new URL('../../packages/streams/test/golden/windows2-inputs.json', import.meta.url))
export const WINDOWS2_GOLDEN = fileURLToPath(new URL('../../packages/streams/test/golden/windows2-java-outputs.json', import.meta.url))

const java = (tool: 'java' | 'javac') => (process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', tool) : tool)

/**
 * Compiles both window programs (with GoldenDriver.java, their shared run loop) in one javac run
 * and runs them side by side: WindowTopologies on windows-inputs.json, MoreWindowTopologies
 * (withRetention, emit strategies, cogroup) on windows2-inputs.json.
 */
export async function runJavaWindows(version: string = STREAMS_VERSION): Promise<{ stdout: string; stdout2: string; libs: string }> {
  const libs = await fetchKafkaStreams(version)
  const out = mkdtempSync(join(tmpdir(), 'tidelog-streams-windows-javac-'))
  const sources = ['GoldenDriver.java', 'WindowTopologies.java', 'MoreWindowTopologies.java'].map((f) => join(here, f))
  await run(java('javac'), ['-J-XX:TieredStopAtLevel=1', '-nowarn', '-cp', `${libs}/*`, '-d', out, ...sources], { timeout: 180_000 })
  const program = (main: string, inputs: string) =>
    run(java('java'), ['-Xmx384m', '-XX:TieredStopAtLevel=1', '-cp', `${out}:${libs}/*`, main, inputs], { timeout: 180_000, maxBuffer: 16 * 1024 * 1024 })
  const [first, second] = await Promise.all([program('WindowTopologies', WINDOWS_INPUTS), program('MoreWindowTopologies', WINDOWS2_INPUTS)])
  return { stdout: first.stdout, stdout2: second.stdout, libs }
}
