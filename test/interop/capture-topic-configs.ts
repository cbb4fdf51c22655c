/**
 * Captures what Apache Kafka 4.4 says about topic configs, into the golden file the
 * broker's tests compare against (apps/broker/test/golden/kafka-4.4-topic-configs.json):
 *
 * - DescribeConfigs v4 of a fresh topic with synonyms and documentation: every
 *   topic config name, its default, type, source and sensitivity;
 * - the broker configs whose names tidelog reports for its BROKER resource;
 * - `kafka-configs.sh --describe --all` (ConfigCommand) of the topic, as printed;
 * - CreateTopics (validate_only) with one bad value at a time: Kafka's error code
 *   and message, so tidelog's validation is checked against Kafka's answers.
 *
 * Run: npx tsx test/interop/capture-topic-configs.ts   (re-run when KAFKA_VERSIONS.latest moves)
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { CreateTopics, DescribeConfigs } from '@tidelog/protocol'
import { KAFKA_VERSIONS, startKafka } from '../helpers/kafka.js'
import { RawClient } from '../helpers/raw-client.js'

export const GOLDEN = join(import.meta.dirname, '../../apps/broker/test/golden/kafka-4.4-topic-configs.json')

/** One bad (or borderline) value each; the golden records what Kafka answers. */
export const PROBES: Record<string, string | null>[] = [
  { 'no.such.config': '1' },
  { 'retention.ms': 'abc' },
  { 'retention.ms': '-2' },
  { 'retention.ms': '' },
  { 'retention.ms': ' 1000 ' },
  { 'retention.ms': null },
  { 'retention.bytes': '-2' },
  { 'segment.bytes': '13' },
  { 'segment.bytes': '1048575' },
  { 'segment.bytes': '2147483648' },
  { 'segment.ms': '0' },
  { 'segment.index.bytes': '3' },
  { 'segment.jitter.ms': '-1' },
  { 'cleanup.policy': 'foo' },
  { 'cleanup.policy': 'compact' },
  { 'cleanup.policy': 'compact,delete' },
  { 'cleanup.policy': '' },
  { 'compression.type': 'brotli' },
  { 'compression.type': 'GZIP' },
  { 'compression.gzip.level': '10' },
  { 'compression.gzip.level': '0' },
  { 'compression.zstd.level': '23' },
  { 'compression.lz4.level': '18' },
  { 'message.timestamp.type': 'Foo' },
  { 'message.timestamp.before.max.ms': '-1' },
  { 'message.timestamp.after.max.ms': 'x' },
  { 'min.cleanable.dirty.ratio': '1.5' },
  { 'min.cleanable.dirty.ratio': 'half' },
  { 'preallocate': 'maybe' },
  { 'preallocate': 'TRUE' },
  { 'min.insync.replicas': '0' },
  { 'min.insync.replicas': '2' },
  { 'unclean.leader.election.enable': 'yes' },
  { 'unclean.leader.election.enable': 'true' },
  { 'remote.storage.enable': 'true' },
  { 'remote.storage.enable': 'false' },
  { 'remote.log.copy.disable': 'true' },
  { 'local.retention.ms': '-3' },
  { 'local.retention.bytes': '-3' },
  { 'max.message.bytes': '-1' },
  { 'index.interval.bytes': '-1' },
  { 'file.delete.delay.ms': '-1' },
  { 'delete.retention.ms': '-1' },
  { 'max.compaction.lag.ms': '0' },
  { 'min.compaction.lag.ms': '-1' },
  { 'flush.ms': '-1' },
  { 'flush.messages': '-1' },
  { 'leader.replication.throttled.replicas': 'foo' },
  { 'leader.replication.throttled.replicas': '0:1,1:1' },
  { 'follower.replication.throttled.replicas': '*' },
  { 'message.format.version': '3.0' },
  { 'message.downconversion.enable': 'true' },
  { 'message.timestamp.difference.max.ms': '1000' },
  { 'log.retention.ms': '1000' },
  { 'max.decompressed.message.bytes': '-1' },
  { 'max.decompressed.message.bytes': '0' },
  { 'errors.deadletterqueue.group.enable': 'maybe' },
  { 'remote.copy.lag.ms': '-2' },
  { 'remote.copy.lag.bytes': '-2' },
  { 'internal.segment.bytes': '1000' },
  { 'compression.zstd.level': '-131073' },
  { 'compression.lz4.level': '0' },
  { 'min.compaction.lag.ms': '10', 'max.compaction.lag.ms': '5' },
  { 'retention.ms': '+5' },
  { 'segment.bytes': '0x100000' },
  { 'min.cleanable.dirty.ratio': 'NaN' },
  { 'min.cleanable.dirty.ratio': '1e-1' },
  { 'cleanup.policy': 'delete,foo' },
  { 'cleanup.policy': 'Delete' },
  { 'cleanup.policy': ' delete , compact ' },
  { 'message.timestamp.type': 'createtime' },
  { 'compression.type': ' gzip ' },
  { 'retention.bytes': '9223372036854775808' },
  { 'follower.replication.throttled.replicas': '0:1, 1:2' },
  { 'leader.replication.throttled.replicas': '*,0:1' },
  { 'leader.replication.throttled.replicas': 'a:1,b' },
  { 'retention.ms': '1', 'segment.bytes': '1' },
]

/** Broker config names tidelog reports for its BROKER resource (32-describe-configs.ts). */
export const BROKER_NAMES = [
  'node.id', 'num.partitions', 'auto.create.topics.enable', 'default.replication.factor', 'offsets.topic.replication.factor',
  'log.segment.bytes', 'log.roll.ms', 'log.retention.ms', 'log.retention.bytes', 'log.flush.interval.messages',
  'log.flush.interval.ms', 'message.max.bytes', 'socket.request.max.bytes', 'fetch.max.bytes', 'max.connections',
  'max.connections.per.ip', 'connections.max.idle.ms', 'connections.max.reauth.ms', 'queued.max.request.bytes', 'producer.id.expiration.ms',
  'producer.id.expiration.check.interval.ms', 'log.message.timestamp.before.max.ms', 'log.message.timestamp.after.max.ms',
  'log.message.timestamp.type', 'log.index.interval.bytes', 'log.cleanup.policy', 'min.insync.replicas', 'compression.type',
  'log.segment.delete.delay.ms', 'log.index.size.max.bytes', 'log.roll.jitter.ms', 'log.preallocate',
  'unclean.leader.election.enable', 'log.cleaner.delete.retention.ms', 'log.cleaner.min.compaction.lag.ms',
  'log.cleaner.max.compaction.lag.ms', 'log.cleaner.min.cleanable.ratio', 'compression.gzip.level', 'compression.lz4.level',
  'compression.zstd.level', 'log.local.retention.ms', 'log.local.retention.bytes', 'log.flush.scheduler.interval.ms',
]

async function main(): Promise<void> {
  const kafka = await startKafka({ version: KAFKA_VERSIONS.latest })
  try {
    const c = await RawClient.connect(kafka.host, kafka.port)
    const topic = 'golden'
    const created = await c.request(CreateTopics.apiKey, 7, {
      topics: [{ name: topic, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 30_000,
      validateOnly: false,
    })
    if (created.body.topics[0].errorCode !== 0) throw new Error(`create: ${JSON.stringify(created.body.topics[0])}`)
    // KRaft publishes the topic to the broker asynchronously.
    let described: any
    for (let i = 0; i < 50; i++) {
      described = (
        await c.request(DescribeConfigs.apiKey, 4, {
          resources: [
            { resourceType: 2, resourceName: topic, configurationKeys: null },
            { resourceType: 4, resourceName: '1', configurationKeys: BROKER_NAMES },
            // The cluster-wide default resource (ConfigCommand --entity-default).
            { resourceType: 4, resourceName: '', configurationKeys: null },
          ],
          includeSynonyms: true,
          includeDocumentation: true,
        })
      ).body
      if (described.results[0].errorCode === 0) break
      await new Promise((r) => setTimeout(r, 200))
    }
    const [t, b, clusterDefault] = described.results
    if (t.errorCode !== 0 || b.errorCode !== 0) throw new Error(`describe: ${JSON.stringify(described.results)}`)
    const shape = (x: any) => ({
      name: x.name,
      value: x.value,
      readOnly: x.readOnly,
      source: x.configSource,
      sensitive: x.isSensitive,
      type: x.configType,
      synonyms: x.synonyms.map((s: any) => ({ name: s.name, value: s.value, source: s.source })),
      documentation: x.documentation,
    })
    const probes = []
    for (const [i, configs] of PROBES.entries()) {
      const r = await c.request(CreateTopics.apiKey, 7, {
        topics: [{ name: `probe-${i}`, numPartitions: 1, replicationFactor: 1, assignments: [], configs: Object.entries(configs).map(([name, value]) => ({ name, value })) }],
        timeoutMs: 30_000,
        validateOnly: true,
      })
      const res = r.body.topics[0]
      probes.push({ configs, errorCode: res.errorCode, errorMessage: res.errorMessage })
    }
    const { stdout } = await kafka.java('org.apache.kafka.tools.ConfigCommand', ['--bootstrap-server', kafka.bootstrap, '--describe', '--all', '--entity-type', 'topics', '--entity-name', topic])
    c.close()
    const golden = {
      kafkaVersion: kafka.runtimeVersion,
      capturedWith: 'test/interop/capture-topic-configs.ts',
      topicConfigs: t.configs.map(shape).sort((a: any, z: any) => a.name.localeCompare(z.name)),
      brokerConfigs: b.configs.map(shape).sort((a: any, z: any) => a.name.localeCompare(z.name)),
      clusterDefaultBrokerConfigs: {
        errorCode: clusterDefault.errorCode,
        configs: clusterDefault.configs.map(shape).map(({ documentation: _d, ...rest }: any) => rest),
      },
      configCommand: stdout.split('\n'),
      probes,
    }
    writeFileSync(GOLDEN, JSON.stringify(golden, null, 2) + '\n')
    console.log(`wrote ${GOLDEN}: ${golden.topicConfigs.length} topic configs, ${probes.length} probes`)
  } finally {
    await kafka.stop()
  }
}

if (process.argv[1] === import.meta.filename) await main()
