/**
 * Topic configs with Kafka's own tools and a live Kafka 4.4:
 *
 * - Kafka's ConfigCommand (`kafka-configs.sh --describe --all`) against the tidelog
 *   broker prints every topic config Kafka 4.4 prints, by the same names, and the
 *   broker's settings, without error; TopicCommand shows Kafka's INVALID_CONFIG
 *   message for a bad value.
 * - A live Apache Kafka 4.4 still lists exactly the topic configs of the checked-in
 *   golden (apps/broker/test/golden/kafka-4.4-topic-configs.json), so a new Kafka
 *   release that adds or drops one shows up here: re-capture with
 *   `npx tsx test/interop/capture-topic-configs.ts` and update topic-config.ts.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startBroker, type Broker } from '@tidelog/broker'
import { CreateTopics, DescribeConfigs } from '@tidelog/protocol'
import { KAFKA_VERSIONS, fetchKafka, javaClientVersion, javaTool, peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { kafkaUse, recordsPeers } from '../helpers/peers.js'
import { RawClient } from '../helpers/raw-client.js'

const version = KAFKA_VERSIONS.latest
const golden: { kafkaVersion: string; topicConfigs: { name: string }[]; configCommand: string[] } = JSON.parse(
  readFileSync(join(import.meta.dirname, '../../apps/broker/test/golden/kafka-4.4-topic-configs.json'), 'utf8'),
)
const goldenNames = golden.topicConfigs.map((c) => c.name)

/** The config names ConfigCommand printed, one `  name=value sensitive=... synonyms={...}` line each. */
function printedNames(stdout: string): string[] {
  return stdout
    .split('\n')
    .map((l) => /^ {2}([a-z0-9.]+)=.* sensitive=(true|false) synonyms=\{.*\}$/.exec(l)?.[1])
    .filter((n): n is string => n !== undefined)
}

describe(`Kafka ${version}'s ConfigCommand and TopicCommand against the tidelog broker`, () => {
  let broker: Broker
  let dataDir: string
  let bootstrap: string
  let skip: string | undefined
  let javaVersion: string | undefined
  recordsPeers(() => (javaVersion ? [{ peer: 'Java client', version: javaVersion }] : undefined))
  const tool = (main: string, args: string[]) => javaTool(main, args, { version })

  beforeAll(async () => {
    try {
      await fetchKafka(version)
      javaVersion = await javaClientVersion(version)
    } catch (e) {
      skip = peerUnavailable(`Apache Kafka ${version} jars`, e) as string
    }
    dataDir = mkdtempSync(join(tmpdir(), 'tidelog-topic-configs-'))
    broker = await startBroker({ port: 0, dataDir, logLevel: 'warn', retentionMs: 3_600_000 })
    bootstrap = `127.0.0.1:${broker.port}`
  })

  afterAll(async () => {
    await broker?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('kafka-configs.sh --describe --all prints every topic config Kafka 4.4 prints, with our values and sources', async (ctx) => {
    if (skip) return ctx.skip()
    await tool('org.apache.kafka.tools.TopicCommand', ['--bootstrap-server', bootstrap, '--create', '--topic', 'cc', '--partitions', '2', '--config', 'segment.ms=60000', '--config', 'preallocate=true'])
    const { stdout } = await tool('org.apache.kafka.tools.ConfigCommand', ['--bootstrap-server', bootstrap, '--describe', '--all', '--entity-type', 'topics', '--entity-name', 'cc'])
    expect(stdout).toMatch(/^All configs for topic cc are:$/m)
    expect(printedNames(stdout)).toEqual(printedNames(golden.configCommand.join('\n')))
    expect(printedNames(stdout)).toEqual(goldenNames)
    expect(stdout).toMatch(/^ {2}segment\.ms=60000 sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:segment\.ms=60000\}$/m)
    expect(stdout).toMatch(/^ {2}preallocate=true sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:preallocate=true, DEFAULT_CONFIG:log\.preallocate=false\}$/m)
    expect(stdout).toMatch(/^ {2}retention\.ms=3600000 sensitive=false synonyms=\{STATIC_BROKER_CONFIG:log\.retention\.ms=3600000, DEFAULT_CONFIG:log\.retention\.hours=168\}$/m)
    expect(stdout).toMatch(/^ {2}cleanup\.policy=delete sensitive=false synonyms=\{DEFAULT_CONFIG:log\.cleanup\.policy=delete\}$/m)

    // Without --all: only the topic's overrides, as Kafka prints them.
    const { stdout: overrides } = await tool('org.apache.kafka.tools.ConfigCommand', ['--bootstrap-server', bootstrap, '--describe', '--entity-type', 'topics', '--entity-name', 'cc'])
    expect(printedNames(overrides)).toEqual(['preallocate', 'segment.ms'])
  })

  it('on a broker with default settings, kafka-configs.sh prints a new topic line for line as Kafka 4.4 does', async (ctx) => {
    if (skip) return ctx.skip()
    const dir = mkdtempSync(join(tmpdir(), 'tidelog-topic-configs-default-'))
    const plain = await startBroker({ port: 0, dataDir: dir, logLevel: 'warn' })
    try {
      const at = `127.0.0.1:${plain.port}`
      await tool('org.apache.kafka.tools.TopicCommand', ['--bootstrap-server', at, '--create', '--topic', 'golden'])
      const { stdout } = await tool('org.apache.kafka.tools.ConfigCommand', ['--bootstrap-server', at, '--describe', '--all', '--entity-type', 'topics', '--entity-name', 'golden'])
      // Where this broker's defaults differ from Kafka 4.4's on purpose (apps/broker/README.md, "Topic configs"),
      // and min.insync.replicas, which Kafka 4.4 sets cluster-wide (DYNAMIC_DEFAULT_BROKER_CONFIG) and this broker does not.
      const differ = ['message.timestamp.after.max.ms', 'max.decompressed.message.bytes', 'min.insync.replicas']
      const keep = (lines: string[]) => lines.filter((l) => l.trim() !== '' && !differ.some((n) => l.startsWith(`  ${n}=`)))
      expect(keep(stdout.split('\n'))).toEqual(keep(golden.configCommand))
      expect(stdout).toMatch(/^ {2}max\.decompressed\.message\.bytes=67108864 sensitive=false synonyms=\{DEFAULT_CONFIG:max\.decompressed\.message\.bytes=67108864\}$/m)
    } finally {
      await plain.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('kafka-configs.sh --describe --all of the broker prints its settings by Kafka\'s names', async (ctx) => {
    if (skip) return ctx.skip()
    const { stdout } = await tool('org.apache.kafka.tools.ConfigCommand', ['--bootstrap-server', bootstrap, '--describe', '--all', '--entity-type', 'brokers', '--entity-name', String(broker.nodeId)])
    expect(stdout).toMatch(new RegExp(`^All configs for broker ${broker.nodeId} are:$`, 'm'))
    const names = printedNames(stdout)
    for (const n of ['log.retention.ms', 'log.segment.bytes', 'message.max.bytes', 'socket.request.max.bytes', 'fetch.max.bytes', 'max.connections', 'num.partitions', 'auto.create.topics.enable', 'log.message.timestamp.before.max.ms', 'log.flush.interval.messages']) {
      expect(names).toContain(n)
    }
    expect(stdout).toMatch(/^ {2}log\.retention\.ms=3600000 sensitive=false synonyms=\{STATIC_BROKER_CONFIG:log\.retention\.ms=3600000, DEFAULT_CONFIG:log\.retention\.hours=168\}$/m)
    // The cluster-wide default holds dynamic defaults only: none on this broker.
    const { stdout: defaults } = await tool('org.apache.kafka.tools.ConfigCommand', ['--bootstrap-server', bootstrap, '--describe', '--entity-type', 'brokers', '--entity-default'])
    expect(defaults).toMatch(/^Default configs for brokers in the cluster are:$/m)
    expect(printedNames(defaults)).toEqual([])
  })

  it('TopicCommand prints Kafka\'s INVALID_CONFIG message for a bad value and an unknown name', async (ctx) => {
    if (skip) return ctx.skip()
    const fail = (config: string) =>
      tool('org.apache.kafka.tools.TopicCommand', ['--bootstrap-server', bootstrap, '--create', '--topic', 'bad', '--config', config]).then(
        () => 'created',
        (e: { stdout: string; stderr: string }) => `${e.stdout}\n${e.stderr}`,
      )
    expect(await fail('segment.bytes=1000')).toContain('Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576')
    expect(await fail('no.such.config=1')).toContain('Unknown topic config name: no.such.config')
    expect(await fail('remote.storage.enable=true')).toContain('Tiered Storage functionality is disabled in the broker')
  })
})

describe(`Apache Kafka ${version} still defines the golden's topic configs`, () => {
  let kafka: KafkaNode | undefined
  let skip: string | undefined
  recordsPeers(() => kafkaUse(kafka))

  beforeAll(async () => {
    try {
      kafka = await startKafka({ version })
    } catch (e) {
      skip = peerUnavailable(`Apache Kafka ${version}`, e) as string
    }
  })
  afterAll(async () => kafka?.stop())

  it('lists exactly the golden topic config names', async (ctx) => {
    if (skip) return ctx.skip()
    expect(kafka!.runtimeVersion).toBe(golden.kafkaVersion)
    const c = await RawClient.connect(kafka!.host, kafka!.port)
    try {
      const created = await c.request(CreateTopics.apiKey, 7, { topics: [{ name: 'drift', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }], timeoutMs: 30_000, validateOnly: false })
      expect(created.body.topics[0].errorCode).toBe(0)
      let names: string[] = []
      // KRaft publishes the new topic to the broker asynchronously.
      for (let i = 0; i < 100 && names.length === 0; i++) {
        const r = await c.request(DescribeConfigs.apiKey, 4, { resources: [{ resourceType: 2, resourceName: 'drift', configurationKeys: null }], includeSynonyms: false, includeDocumentation: false })
        if (r.body.results[0].errorCode === 0) names = r.body.results[0].configs.map((x: { name: string }) => x.name).sort()
        else await new Promise((res) => setTimeout(res, 200))
      }
      expect(names).toEqual(goldenNames)
    } finally {
      c.close()
    }
  })
})
