/**
 * Kafka Connect's FileStream connectors for the Connect interop test. connect-runtime comes
 * with Kafka's jars (test/helpers/kafka/pom.xml pulls it in through kafka-tools), but
 * connect-file is a plugin that Kafka ships outside the worker's classpath since 3.2.
 * The Maven mirror serves connect-file only up to 4.3.0, and a 4.3 plugin cannot run in a 4.4
 * worker (4.4 moved AppInfoParser, which its version() calls, to common.utils.internals), so
 * the worker and its plugin are both 4.3.0.
 */
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { cacheRoot } from '../../helpers/kafka.js'

const run = promisify(execFile)
const here = fileURLToPath(new URL('.', import.meta.url))

export const CONNECT_VERSION = '4.3.0'

/** Downloads (once) connect-file and returns a plugin.path folder holding only it. */
export async function fetchConnectFile(version: string = CONNECT_VERSION): Promise<string> {
  const base = join(cacheRoot(), `connect-file-${version}`)
  const plugins = join(base, 'plugins')
  const done = join(base, '.complete')
  if (existsSync(done)) return plugins
  const dir = join(plugins, 'connect-file')
  mkdirSync(dir, { recursive: true })
  await run('mvn', ['-q', '-B', '-f', join(here, 'pom.xml'), 'dependency:copy-dependencies', `-Dkafka.version=${version}`, `-DoutputDirectory=${dir}`], {
    maxBuffer: 16 * 1024 * 1024,
    timeout: 600_000,
  })
  if (!readdirSync(dir).includes(`connect-file-${version}.jar`)) throw new Error(`Maven did not deliver connect-file ${version} into ${dir}`)
  writeFileSync(done, new Date().toISOString())
  return plugins
}
