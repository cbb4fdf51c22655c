/**
 * Apache Kafka's own Java clients and tools against the tidelog broker: the Admin
 * client (TopicCommand, ConsumerGroupCommand), the Java producer with its defaults
 * (idempotent, acks=all) plus snappy, Java consumers in a group, and
 * ProducerPerformance / ConsumerPerformance.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startBroker, type Broker } from '@tidelog/broker'
import { KAFKA_VERSIONS, fetchKafka, javaClientVersion, javaTool, peerUnavailable } from '../helpers/kafka.js'
import { recordsPeers } from '../helpers/peers.js'

const version = KAFKA_VERSIONS.latest

describe(`Java client ${version} against the tidelog broker`, () => {
  let broker: Broker
  let dataDir: string
  let bootstrap: string
  let skip: string | undefined
  let javaVersion: string | undefined
  recordsPeers(() => (javaVersion ? [{ peer: 'Java client', version: javaVersion }] : undefined))
  const tool = (main: string, args: string[], opts?: { input?: string; timeoutMs?: number }) => javaTool(main, args, { version, ...opts })

  beforeAll(async () => {
    try {
      await fetchKafka(version)
      javaVersion = await javaClientVersion(version)
    } catch (e) {
      skip = peerUnavailable(`Apache Kafka ${version} jars`, e) as string
    }
    dataDir = mkdtempSync(join(tmpdir(), 'tidelog-java-'))
    broker = await startBroker({ port: 0, dataDir, logLevel: 'warn' })
    bootstrap = `127.0.0.1:${broker.port}`
  })

  afterAll(async () => {
    await broker?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('the Admin client creates and describes topics', async (ctx) => {
    if (skip) return ctx.skip()
    await tool('org.apache.kafka.tools.TopicCommand', ['--bootstrap-server', bootstrap, '--create', '--topic', 'java-events', '--partitions', '6', '--config', 'retention.ms=3600000'])
    const { stdout: list } = await tool('org.apache.kafka.tools.TopicCommand', ['--bootstrap-server', bootstrap, '--list'])
    expect(list.split('\n')).toContain('java-events')
    const { stdout: described } = await tool('org.apache.kafka.tools.TopicCommand', ['--bootstrap-server', bootstrap, '--describe', '--topic', 'java-events'])
    expect(described).toMatch(/PartitionCount:\s*6/)
    expect(described.match(/Partition: \d+\s+Leader: \d+/g)).toHaveLength(6)
    const { stdout: configs } = await tool('org.apache.kafka.tools.ConfigCommand', ['--bootstrap-server', bootstrap, '--describe', '--entity-type', 'topics', '--entity-name', 'java-events'])
    expect(configs).toMatch(/retention\.ms=3600000/)
  })

  it('the Java producer with its defaults (idempotent, acks=all) and snappy; Java consumers in a group read back everything', async (ctx) => {
    if (skip) return ctx.skip()
    const count = 20_000
    const input = Array.from({ length: count }, (_, i) => `key-${i % 97}\tvalue-${i}`).join('\n') + '\n'
    await tool(
      'org.apache.kafka.tools.ConsoleProducer',
      ['--bootstrap-server', bootstrap, '--topic', 'java-events', '--property', 'parse.key=true', '--property', 'key.separator=\t',
        '--producer-property', 'compression.type=snappy', '--producer-property', 'enable.idempotence=true', '--producer-property', 'acks=all'],
      { input },
    )
    // Two consumers in one group at once; each stops after 10 s without records.
    const consume = () =>
      tool('org.apache.kafka.tools.consumer.ConsoleConsumer', [
        '--bootstrap-server', bootstrap, '--topic', 'java-events', '--group', 'java-group', '--from-beginning',
        '--timeout-ms', '10000', '--formatter-property', 'print.key=true', '--formatter-property', 'key.separator=\t',
      ], { timeoutMs: 120_000 })
    const results = await Promise.all([consume(), consume()])
    const lines = results.flatMap((r) => r.stdout.split('\n').filter((l) => l.includes('\t')))
    const stray = results.flatMap((r) => r.stdout.split('\n').filter((l) => l && !l.includes('\t')))
    expect(stray, 'lines that are not records').toEqual([])
    const values = new Set(lines.map((l) => l.split('\t')[1]))
    expect(values.size).toBe(count)
    for (let i = 0; i < count; i += 997) expect(values.has(`value-${i}`)).toBe(true)
    // Every key stayed on one partition: the group's consumers saw each key in one place only.
    const { stdout: group } = await tool('org.apache.kafka.tools.consumer.group.ConsumerGroupCommand', ['--bootstrap-server', bootstrap, '--describe', '--group', 'java-group'])
    const rows = group.split('\n').filter((l) => l.startsWith('java-group'))
    expect(rows).toHaveLength(6)
    let committed = 0
    for (const row of rows) {
      const cols = row.trim().split(/\s+/)
      // GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
      expect(cols[3]).toBe(cols[4])
      committed += Number(cols[3])
    }
    expect(committed).toBe(count)
  })

  it('ProducerPerformance and ConsumerPerformance complete', async (ctx) => {
    if (skip) return ctx.skip()
    const perf = await tool('org.apache.kafka.tools.ProducerPerformance', [
      '--topic', 'java-perf', '--num-records', '100000', '--record-size', '100', '--throughput', '-1',
      '--producer-props', `bootstrap.servers=${bootstrap}`, 'linger.ms=5', 'batch.size=65536',
    ])
    expect(perf.stdout).toMatch(/100000 records sent/)
    const consumed = await tool('org.apache.kafka.tools.ConsumerPerformance', [
      '--bootstrap-server', bootstrap, '--topic', 'java-perf', '--messages', '100000', '--timeout', '60000', '--group', 'java-perf-group',
    ])
    // The data line: start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, ...
    const data = consumed.stdout.trim().split('\n').at(-1)!.split(',').map((s) => s.trim())
    expect(Number(data[4])).toBe(100000)
  })
})
