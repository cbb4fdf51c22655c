/**
 * What a peer says its version is, asked at run time. No vitest here: apps/bench
 * reaches these through test/helpers/kafka.ts too. Each probe throws when the peer is
 * missing, which the callers turn into peerUnavailable() (a failure under CI=true).
 */
import { execFileSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'

function output(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 })
}

/** `kcat -V`: "Version 1.7.1 (..., librdkafka 2.0.2 ...)" -> "1.7.1 (librdkafka 2.0.2)". Throws when kcat is missing. */
export function kcatVersion(): string {
  const out = output('kcat', ['-V'])
  const kcat = /^Version (\S+)/m.exec(out)?.[1]
  const rd = /librdkafka (\S+)/.exec(out)?.[1]
  if (!kcat || !rd) throw new Error(`kcat -V said: ${out}`)
  return `${kcat} (librdkafka ${rd})`
}

/** `zstd -V` / `lz4 -V`: "*** ... v1.5.4, by Yann Collet ***" -> "1.5.4". Throws when the CLI is missing. */
export function cliVersion(cmd: 'zstd' | 'lz4'): string {
  const out = output(cmd, ['-V'])
  const v = /\bv(\d+\.\d+\.\d+)/.exec(out)?.[1]
  if (!v) throw new Error(`${cmd} -V said: ${out}`)
  return v
}

/** The version /usr/bin/python3 imports, e.g. kafka.__version__ or confluent_kafka.version(). */
export function pythonVersion(python: string, expression: string, module: string): string {
  return output(python, ['-c', `import ${module}; print(${expression})`]).trim()
}

/** The kafkajs the tests import (its package.json, resolved as the import is). */
export function kafkajsVersion(): string {
  const require = createRequire(import.meta.url)
  return (require('kafkajs/package.json') as { version: string }).version
}

const jarVersions = new Map<string, string>()
/**
 * The version the JVM reports for a Kafka classpath folder: AppInfoParser (what the
 * broker and every Java client log as "Kafka version") reads kafka/kafka-version.properties
 * from the kafka-clients jar, and exactly one such jar may be on the classpath.
 */
export function kafkaLibsVersion(libs: string): string {
  const cached = jarVersions.get(libs)
  if (cached) return cached
  const jars = readdirSync(libs).filter((f) => /^kafka-clients-.*\.jar$/.test(f))
  if (jars.length !== 1) throw new Error(`${libs} holds ${jars.length} kafka-clients jars: ${jars.join(', ')}`)
  const props = output('unzip', ['-p', join(libs, jars[0]!), 'kafka/kafka-version.properties'])
  const v = /^version=(\S+)/m.exec(props)?.[1]
  if (!v) throw new Error(`no version in ${jars[0]}'s kafka-version.properties: ${props}`)
  jarVersions.set(libs, v)
  return v
}
