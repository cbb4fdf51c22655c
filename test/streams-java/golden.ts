/**
 * Kafka Streams' own TopologyTestDriver as the reference: fetches kafka-streams and
 * kafka-streams-test-utils from Maven Central (test/streams-java/pom.xml, through
 * `mvn dependency:copy-dependencies`, into the same cache as Kafka's jars), compiles
 * GoldenTopologies.java against them and runs it on the checked-in inputs. Used by the interop
 * test (which checks the golden file is what Java prints today) and by regenerate.ts.
 */
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { cacheRoot } from '../helpers/kafka.js'

const run = promisify(execFile)
const here = fileURLToPath(new URL('.', import.meta.url))

export const STREAMS_VERSION = '4.4.0'
export const INPUTS = fileURLToPath(new URL('../../packages/streams/test/golden/inputs.json', import.meta.url))
export const GOLDEN = fileURLToPath(new URL('../../packages/streams/test/golden/java-outputs.json', import.meta.url))

const java = (tool: 'java' | 'javac') => (process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', tool) : tool)

/** Downloads (once) the Kafka Streams jars and returns their folder. */
export async function fetchKafkaStreams(version: string = STREAMS_VERSION): Promise<string> {
  const libs = join(cacheRoot(), `kafka-streams-${version}`, 'libs')
  const done = join(cacheRoot(), `kafka-streams-${version}`, '.complete')
  if (existsSync(done)) return libs
  mkdirSync(libs, { recursive: true })
  await run('mvn', ['-q', '-B', '-f', join(here, 'pom.xml'), 'dependency:copy-dependencies', `-Dkafka.version=${version}`, `-DoutputDirectory=${libs}`], {
    maxBuffer: 16 * 1024 * 1024,
    timeout: 600_000,
  })
  if (!readdirSync(libs).some((f) => f.startsWith(`kafka-streams-test-utils-${version}`))) {
    throw new Error(`Maven did not deliver kafka-streams-test-utils ${version} into ${libs}`)
  }
  writeFileSync(done, new Date().toISOString())
  return libs
}

/** Both Java programs, compiled once per process (one javac run serves the golden and the join program). */
const compiled = new Map<string, Promise<{ libs: string; out: string }>>()
function compileJava(version: string): Promise<{ libs: string; out: string }> {
  let p = compiled.get(version)
  if (p === undefined) {
    p = (async () => {
      const libs = await fetchKafkaStreams(version)
      const out = mkdtempSync(join(tmpdir(), 'tidelog-streams-javac-'))
      await run(java('javac'), ['-nowarn', '-cp', `${libs}/*`, '-d', out, join(here, 'GoldenDriver.java'), join(here, 'GoldenTopologies.java'), join(here, 'JoinTopologies.java')], { timeout: 180_000 })
      return { libs, out }
    })()
    compiled.set(version, p)
    p.catch(() => compiled.delete(version))
  }
  return p
}

export const JOIN_INPUTS = fileURLToPath(new URL('../../packages/streams/test/golden/joins-inputs.json', import.meta.url))
export const JOIN_GOLDEN = fileURLToPath(new URL('../../packages/streams/test/golden/joins-java-outputs.json', import.meta.url))

/** Compiles and runs JoinTopologies.java (which reuses GoldenTopologies' run loop) on the join inputs. */
export async function runJavaJoinGolden(version: string = STREAMS_VERSION): Promise<{ stdout: string; libs: string }> {
  const { libs, out } = await compileJava(version)
  const { stdout } = await run(java('java'), ['-Xmx384m', '-XX:TieredStopAtLevel=1', '-cp', `${out}:${libs}/*`, 'JoinTopologies', JOIN_INPUTS], {
    timeout: 180_000,
    maxBuffer: 16 * 1024 * 1024,
  })
  return { stdout, libs }
}

/** Compiles and runs GoldenTopologies.java; returns what it printed (the golden JSON text) and the jar folder. */
export async function runJavaGolden(version: string = STREAMS_VERSION): Promise<{ stdout: string; libs: string }> {
  const { libs, out } = await compileJava(version)
  const { stdout } = await run(java('java'), ['-Xmx384m', '-XX:TieredStopAtLevel=1', '-cp', `${out}:${libs}/*`, 'GoldenTopologies', INPUTS], {
    timeout: 180_000,
    maxBuffer: 16 * 1024 * 1024,
  })
  return { stdout, libs }
}
