/**
 * Client quotas as Kafka's own tools see them (issue 16): kafka-configs.sh
 * (org.apache.kafka.tools.ConfigCommand, Kafka 4.4) sets, describes and deletes user and
 * client-id quotas (named and default entities) on Apache Kafka 4.4 and on the tidelog broker,
 * and prints the same output on both, errors included. Then a Java producer over a client-id
 * quota reports a throttle (its produce-throttle-time-max metric above zero) on both: the broker
 * answered throttle_time_ms and the Java client honoured it. Each broker's script runs in one
 * JVM (quotas-java/QuotaSteps.java).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Broker, startBroker } from '@tidelog/broker'
import { KAFKA_VERSIONS, type KafkaNode, compileJava, peerUnavailable, spawnJavaTool, startKafka } from '../helpers/kafka.js'
import { recordPeer } from '../helpers/peers.js'

const version = KAFKA_VERSIONS.latest
const SOURCE = fileURLToPath(new URL('./quotas-java/QuotaSteps.java', import.meta.url))

let dir: string
let kafka: KafkaNode | undefined
let broker: Broker | undefined
let skip: string | undefined
let classes: Promise<string>

/** Runs the steps against one broker in one JVM; returns each step's output lines. */
async function steps(bootstrap: string, script: string[][]): Promise<string[][]> {
  const withServer = script.map((s) => (s[0] === 'configs' ? [...s, '--bootstrap-server', bootstrap] : s))
  const args = [bootstrap, ...withServer.flatMap((s, i) => (i === 0 ? s : ['::', ...s]))]
  const child = await spawnJavaTool('QuotaSteps', args, { version, classpath: [await classes] })
  child.stdin!.end()
  let out = ''
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d))
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d))
  const timer = setTimeout(() => child.kill('SIGKILL'), 180_000)
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
  clearTimeout(timer)
  const parts = out.split(/^=== step \d+\n/m).slice(1)
  if (code !== 0 || parts.length !== script.length) throw new Error(`QuotaSteps on ${bootstrap} exited ${code} after ${parts.length} of ${script.length} steps:\n${out}`)
  // ConfigCommand lists entities from a hash map: the order of lines is not part of the answer;
  // nor is the address, which an error message repeats.
  return parts.map((p) => p.split('\n').map((l) => l.trim().replaceAll(bootstrap, '<bootstrap>')).filter((l) => l !== '').sort())
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tidelog-quotas-interop-'))
  classes = compileJava([SOURCE], { version })
  classes.catch(() => {})
  try {
    kafka = await startKafka({ version, startTimeoutMs: 120_000 })
  } catch (e) {
    skip = peerUnavailable(`Apache Kafka ${version}`, e) as string
  }
  broker = await startBroker({ port: 0, dataDir: join(dir, 'tidelog'), logLevel: 'warn' })
}, 240_000)

afterAll(async () => {
  await kafka?.stop()
  await broker?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe(`kafka-configs.sh ${version} client quotas against tidelog and Apache Kafka`, () => {
  it('sets, describes and deletes quotas with the same output on both; a Java producer over its quota is throttled on both', async (ctx) => {
    if (skip !== undefined) return ctx.skip()
    const script = [
      ['configs', '--alter', '--add-config', 'producer_byte_rate=1024,consumer_byte_rate=2048', '--entity-type', 'users', '--entity-name', 'alice'],
      ['configs', '--alter', '--add-config', 'producer_byte_rate=4096', '--entity-type', 'clients', '--entity-default'],
      ['configs', '--alter', '--add-config', 'request_percentage=50', '--entity-type', 'users', '--entity-name', 'alice', '--entity-type', 'clients', '--entity-name', 'etl'],
      ['configs', '--describe', '--entity-type', 'users', '--entity-name', 'alice'],
      ['configs', '--describe', '--entity-type', 'clients', '--entity-default'],
      ['configs', '--describe', '--entity-type', 'users', '--entity-name', 'alice', '--entity-type', 'clients', '--entity-name', 'etl'],
      ['configs', '--describe', '--entity-type', 'clients'],
      ['configs', '--alter', '--add-config', 'producer_byte_rate=1.5', '--entity-type', 'users', '--entity-name', 'bob'],
      ['configs', '--alter', '--delete-config', 'consumer_byte_rate', '--entity-type', 'users', '--entity-name', 'alice'],
      ['configs', '--describe', '--entity-type', 'users', '--entity-name', 'alice'],
      ['configs', '--alter', '--add-config', 'producer_byte_rate=1024', '--entity-type', 'clients', '--entity-name', 'throttled'],
      ['produce', 'quota-java', 'throttled'],
    ]
    const [theirs, ours] = await Promise.all([steps(`127.0.0.1:${kafka!.port}`, script), steps(`127.0.0.1:${broker!.port}`, script)])
    // Log lines carry timestamps; the producer's own lines are compared below.
    const plain = (out: string[]) => out.filter((l) => !l.startsWith('['))
    ours.forEach((out, i) => expect(plain(out), `step ${i}: ${script[i]!.join(' ')}`).toEqual(plain(theirs[i]!)))
    // Java's NetworkClient logs the throttle_time_ms it honours: the same on both, within rounding
    // and the few ms between the two brokers' clocks (Kafka's formula on the same bytes).
    const throttledFor = (out: string[]) => Number(/is throttled for (\d+) ms/.exec(out.join('\n'))?.[1])
    const [tk, tt] = [throttledFor(theirs[11]!), throttledFor(ours[11]!)]
    expect(tk).toBeGreaterThan(0)
    expect(Math.abs(tt - tk)).toBeLessThanOrEqual(tk * 0.1)
    console.log(`Java producer throttled for ${tt} ms by tidelog, ${tk} ms by Apache Kafka ${kafka!.runtimeVersion}`)
    // The comparison is only worth something if the output says something.
    expect(ours[3]).toEqual(["Quota configs for user-principal 'alice' are consumer_byte_rate=2048.0, producer_byte_rate=1024.0"])
    expect(ours[4]!.join('\n')).toMatch(/default client-id.*producer_byte_rate=4096.0/)
    expect(ours[7]!.join('\n')).toMatch(/producer_byte_rate cannot be a fractional value|Invalid|Error/)
    expect(ours[9]).toEqual(["Quota configs for user-principal 'alice' are producer_byte_rate=1024.0"])
    expect(plain(ours[11]!)).toEqual(['throttle-time-max > 0'])
    recordPeer('Apache Kafka', kafka!.runtimeVersion)
    recordPeer('Java client', kafka!.runtimeVersion)
  }, 300_000)
})
