/**
 * DescribeLogDirs (35) over a real socket: the data directory with each partition's size
 * on disk (what the segment files hold), the disk's total and usable bytes from v4 only,
 * topic/partition selection as Kafka answers it, KAFKA_STORAGE_ERROR once the directory
 * is offline, and config changes to an offline directory refused with it.
 */
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { ApiKeys, ErrorCodes } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { type BrokerOptions } from '../src/index.js'
import { makeBatch } from './helpers/batches.js'
import { faultyFs } from './helpers/faulty-fs.js'
import { RawClient } from './helpers/raw-client.js'
import { startWithClient, trackOpened } from './helpers/opened.js'

const open = trackOpened()
const start = (opts: BrokerOptions = {}) => startWithClient(open, opts)

async function createTopic(c: RawClient, name: string, partitions: number) {
  const r = await c.request(ApiKeys.CreateTopics, 7, { topics: [{ name, numPartitions: partitions, replicationFactor: 1, assignments: [], configs: [] }], timeoutMs: 1000, validateOnly: false })
  expect(r.topics[0].errorCode).toBe(0)
}

const produce = (c: RawClient, topic: string, partition: number, records: Buffer) =>
  c
    .request(ApiKeys.Produce, 9, { transactionalId: null, acks: -1, timeoutMs: 5000, topicData: [{ name: topic, partitionData: [{ index: partition, records }] }] })
    .then((r) => r.responses[0].partitionResponses[0])

/** Bytes of the segment files (.log) of a partition directory: what Kafka's partitionSize counts. */
function logBytes(dataDir: string, dir: string): bigint {
  return readdirSync(join(dataDir, dir))
    .filter((f) => f.endsWith('.log'))
    .reduce((n, f) => n + BigInt(statSync(join(dataDir, dir, f)).size), 0n)
}

describe('DescribeLogDirs', () => {
  it('lists the data directory, every partition with its size on disk, and the disk from v4', async () => {
    const { b, c } = await start()
    await createTopic(c, 'a', 2)
    await createTopic(c, 'b', 1)
    expect((await produce(c, 'a', 1, makeBatch(5, { valueSize: 300 }))).errorCode).toBe(0)
    expect((await produce(c, 'b', 0, makeBatch(2, { valueSize: 100 }))).errorCode).toBe(0)

    const v4 = await c.request(ApiKeys.DescribeLogDirs, 4, { topics: null })
    expect(v4.errorCode).toBe(0)
    expect(v4.results).toHaveLength(1)
    const dir = v4.results[0]
    expect([dir.errorCode, dir.logDir]).toEqual([0, b.dataDir])
    expect(dir.totalBytes).toBeGreaterThan(0n)
    expect(dir.usableBytes).toBeGreaterThan(0n)
    expect(dir.usableBytes).toBeLessThanOrEqual(dir.totalBytes)
    const sizes = Object.fromEntries(
      dir.topics.flatMap((t: any) => t.partitions.map((p: any) => [`${t.name}-${p.partitionIndex}`, [p.partitionSize, p.offsetLag, p.isFutureKey]])),
    )
    expect(sizes).toEqual({
      'a-0': [0n, 0n, false],
      'a-1': [logBytes(b.dataDir, 'a-1'), 0n, false],
      'b-0': [logBytes(b.dataDir, 'b-0'), 0n, false],
    })
    expect(sizes['a-1'][0]).toBeGreaterThan(1500n)

    // Before v4 there are no disk totals (the codec writes none; Kafka sends none either).
    const v1 = await c.request(ApiKeys.DescribeLogDirs, 1, { topics: null })
    expect(v1.results[0].topics.map((t: any) => t.name).sort()).toEqual(['a', 'b'])
    expect(v1.results[0].totalBytes ?? -1n).toBe(-1n)
  })

  it('answers only the asked-for partitions it hosts, as Kafka does', async () => {
    const { c } = await start()
    await createTopic(c, 'a', 2)
    const r = await c.request(ApiKeys.DescribeLogDirs, 4, { topics: [{ topic: 'a', partitions: [1, 7] }, { topic: 'missing', partitions: [0] }] })
    expect(r.results[0].topics.map((t: any) => [t.name, t.partitions.map((p: any) => p.partitionIndex)])).toEqual([['a', [1]]])
  })

  it('an offline directory answers KAFKA_STORAGE_ERROR; config changes are refused with it and the broker stays up', async () => {
    const fs = faultyFs()
    const { c } = await start({ fs, flushMessages: 1 })
    await createTopic(c, 'doomed', 1)
    fs.plan.failFsync = (path) => path.includes('doomed-0')
    expect((await produce(c, 'doomed', 0, makeBatch(1))).errorCode).toBe(ErrorCodes.KAFKA_STORAGE_ERROR)
    const r = await c.request(ApiKeys.DescribeLogDirs, 4, { topics: null })
    expect(r.results.map((d: any) => [d.errorCode, d.topics])).toEqual([[ErrorCodes.KAFKA_STORAGE_ERROR, []]])
    const alter = await c.request(ApiKeys.IncrementalAlterConfigs, 1, {
      resources: [{ resourceType: 2, resourceName: 'doomed', configs: [{ name: 'retention.ms', configOperation: 0, value: '1000' }] }],
      validateOnly: false,
    })
    expect(alter.responses[0].errorCode).toBe(ErrorCodes.KAFKA_STORAGE_ERROR)
    // Refused before it applied: the topic keeps its old value.
    const d = await c.request(ApiKeys.DescribeConfigs, 4, { resources: [{ resourceType: 2, resourceName: 'doomed', configurationKeys: ['retention.ms'] }], includeSynonyms: false, includeDocumentation: false })
    expect(d.results[0].configs[0].value).toBe('604800000')
    // Still answering.
    expect((await c.request(ApiKeys.ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })).errorCode).toBe(0)
  })
})
