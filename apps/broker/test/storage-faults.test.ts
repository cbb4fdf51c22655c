import { ApiKeys, ErrorCodes, ZERO_UUID, decodeRecordBatches } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { type BrokerOptions, startBroker } from '../src/index.js'
import { makeBatch } from './helpers/batches.js'
import { type FaultyFs, faultyFs } from './helpers/faulty-fs.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'
import { trackOpened } from './helpers/opened.js'

const open = trackOpened()

async function start(opts: BrokerOptions) {
  const b = await startBroker({ port: 0, ...opts })
  open.brokers.push(b)
  const c = await RawClient.connect(b.port)
  open.clients.push(c)
  return { b, c }
}

const produce = (c: RawClient, topic: string, records: Buffer) =>
  c
    .request(ApiKeys.Produce, 9, {
      transactionalId: null,
      acks: -1,
      timeoutMs: 1000,
      topicData: [{ name: topic, partitionData: [{ index: 0, records }] }],
    })
    .then((r) => r.responses[0].partitionResponses[0] as { errorCode: number; baseOffset: bigint })

const fetchFrom = (c: RawClient, topic: string, offset: bigint) =>
  c
    .request(ApiKeys.Fetch, 12, {
      replicaId: -1, maxWaitMs: 0, minBytes: 1, maxBytes: 1 << 20, isolationLevel: 0, sessionId: 0, sessionEpoch: -1,
      topics: [{ topic, partitions: [{ partition: 0, fetchOffset: offset, partitionMaxBytes: 1 << 20, logStartOffset: -1n, currentLeaderEpoch: -1 }] }],
      forgottenTopicsData: [], rackId: '',
    })
    .then((r) => r.responses[0].partitions[0] as { errorCode: number; highWatermark: bigint; records: Uint8Array })

const metadata = (c: RawClient, names: string[]) =>
  c.request(ApiKeys.Metadata, 12, { topics: names.map((name) => ({ name, topicId: ZERO_UUID })), allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false })

function values(records: Uint8Array): string[] {
  const out: string[] = []
  for (const b of decodeRecordBatches(Buffer.from(records))) for (const r of b) out.push(r.value!.toString())
  return out
}

async function setup(fs: FaultyFs) {
  const dataDir = tempDir()
  const { b, c } = await start({ dataDir, fs, flushMessages: 1, flushMs: 20, retentionCheckIntervalMs: 20 })
  await metadata(c, ['good', 'doomed'])
  expect((await produce(c, 'doomed', makeBatch([{ value: 'acked' }]))).errorCode).toBe(0)
  expect((await produce(c, 'good', makeBatch([{ value: 'good-0' }]))).errorCode).toBe(0)
  return { dataDir, b, c }
}

describe('a failed fsync or write takes the log directory offline', () => {
  it('answers KAFKA_STORAGE_ERROR to produce, fetch and metadata after a failed fsync, never retries it, and stays up', async () => {
    const fs = faultyFs()
    const { dataDir, b, c } = await setup(fs)

    fs.plan.failFsync = (path) => path.includes('doomed-0')
    const failed = await produce(c, 'doomed', makeBatch([{ value: 'not acked' }]))
    expect(failed.errorCode).toBe(ErrorCodes.KAFKA_STORAGE_ERROR)

    // The disk "recovers": an fsync retried now could report success for pages the kernel dropped.
    fs.plan.failFsync = undefined
    const fsyncsBefore = fs.fsyncs
    expect((await produce(c, 'doomed', makeBatch([{ value: 'later' }]))).errorCode).toBe(ErrorCodes.KAFKA_STORAGE_ERROR)
    expect((await produce(c, 'good', makeBatch([{ value: 'good-1' }]))).errorCode).toBe(ErrorCodes.KAFKA_STORAGE_ERROR)
    expect(fs.fsyncs).toBe(fsyncsBefore)

    expect((await fetchFrom(c, 'doomed', 0n)).errorCode).toBe(ErrorCodes.KAFKA_STORAGE_ERROR)
    expect((await fetchFrom(c, 'good', 0n)).errorCode).toBe(ErrorCodes.KAFKA_STORAGE_ERROR)
    const md = await metadata(c, ['good', 'doomed'])
    for (const t of md.topics) {
      expect(t.errorCode).toBe(0)
      expect(t.partitions[0]).toMatchObject({ errorCode: ErrorCodes.KAFKA_STORAGE_ERROR, offlineReplicas: [1] })
    }
    // Timers (flush.ms, retention) leave the failed directory alone: no retried fsync, no deletion.
    await new Promise((r) => setTimeout(r, 150))
    expect(fs.fsyncs).toBe(fsyncsBefore)
    const created = await c.request(ApiKeys.CreateTopics, 7, {
      topics: [{ name: 'fresh', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 1000,
      validateOnly: false,
    })
    expect(created.topics[0].errorCode).toBe(ErrorCodes.KAFKA_STORAGE_ERROR)
    // Requests that need no log are still answered on the same connection.
    const versions = await c.request(ApiKeys.ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })
    expect(versions.errorCode).toBe(0)
    await b.close()
    open.brokers.splice(open.brokers.indexOf(b), 1)

    // A restart on a healthy disk recovers (the marker was not written) and serves what was acknowledged.
    const again = await start({ dataDir, flushMessages: 1 })
    const doomed = await fetchFrom(again.c, 'doomed', 0n)
    expect(doomed.errorCode).toBe(0)
    expect(values(doomed.records)[0]).toBe('acked')
    expect(values(doomed.records)).not.toContain('later')
    expect(values((await fetchFrom(again.c, 'good', 0n)).records)).toEqual(['good-0'])
    expect((await produce(again.c, 'good', makeBatch([{ value: 'good-1' }]))).errorCode).toBe(0)
  })

  it('answers KAFKA_STORAGE_ERROR to the produce whose write fails, and leaves no partial batch', async () => {
    const fs = faultyFs()
    const { dataDir, b, c } = await setup(fs)
    fs.plan.failWrite = (path) => path.includes('doomed-0') && path.endsWith('.log')
    expect((await produce(c, 'doomed', makeBatch([{ value: 'torn' }]))).errorCode).toBe(ErrorCodes.KAFKA_STORAGE_ERROR)
    fs.plan.failWrite = undefined
    expect((await produce(c, 'doomed', makeBatch([{ value: 'after' }]))).errorCode).toBe(ErrorCodes.KAFKA_STORAGE_ERROR)
    await b.close()
    open.brokers.splice(open.brokers.indexOf(b), 1)

    const again = await start({ dataDir })
    const doomed = await fetchFrom(again.c, 'doomed', 0n)
    expect(doomed.highWatermark).toBe(1n)
    expect(values(doomed.records)).toEqual(['acked'])
  })

  it('a failed checkpoint write also takes the directory offline', async () => {
    const fs = faultyFs()
    const dataDir = tempDir()
    const { c } = await start({ dataDir, fs, checkpointIntervalMs: 50 })
    await metadata(c, ['t'])
    expect((await produce(c, 't', makeBatch(1))).errorCode).toBe(0)
    fs.plan.failFsync = (path) => path.endsWith('checkpoint.tmp')
    const deadline = Date.now() + 5000
    let code = 0
    while (code === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 30))
      code = (await produce(c, 't', makeBatch(1))).errorCode
    }
    expect(code).toBe(ErrorCodes.KAFKA_STORAGE_ERROR)
  })
})
