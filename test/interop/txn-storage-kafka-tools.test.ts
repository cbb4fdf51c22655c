/**
 * The storage side of transactions read by Apache Kafka's own DumpLogSegments
 * (kafka-dump-log.sh, 4.4): the control batches the broker writes for commit and
 * abort markers decode as Kafka's EndTransactionMarker, and the `.txnindex` file
 * is Kafka's aborted-transaction index, entry for entry; and Kafka's Java consumer
 * (ConsoleConsumer) with isolation.level=read_committed reads only committed and
 * plain records, below the open transaction, from the broker's Fetch answers
 * (last stable offset, aborted_transactions). The log is written by the broker
 * over the wire (a transactional producer's batches) and by
 * PartitionLog.appendTxnMarker (what the transaction coordinator calls).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PartitionLog, startBroker } from '@tidelog/broker'
import { ApiKeys, ZERO_UUID, encodeRecordBatch } from '@tidelog/protocol'
import { KAFKA_VERSIONS, fetchKafka, javaTool, peerUnavailable } from '../helpers/kafka.js'
import { recordsPeers } from '../helpers/peers.js'
import { RawClient } from '../helpers/raw-client.js'

const version = KAFKA_VERSIONS.latest

describe(`Kafka ${version}'s tools read the broker's transactions`, () => {
  let dataDir: string
  let skip: string | undefined
  recordsPeers(() => (skip === undefined ? [{ peer: 'Apache Kafka', version }] : undefined))

  beforeAll(async () => {
    try {
      await fetchKafka(version)
    } catch (e) {
      skip = peerUnavailable(`Apache Kafka ${version} jars`, e) as string
    }
    dataDir = mkdtempSync(join(tmpdir(), 'tidelog-txn-dump-'))
  })

  afterAll(() => {
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('decodes commit and abort markers with their coordinator epoch, and the aborted-transaction entries', async (ctx) => {
    if (skip !== undefined) ctx.skip(skip)
    const broker = await startBroker({ port: 0, dataDir, logLevel: 'warn' })
    const c = await RawClient.connect('127.0.0.1', broker.port)
    try {
      await c.request(ApiKeys.Metadata, 12, { topics: [{ name: 't', topicId: ZERO_UUID }], allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false })
      for (const [pid, seq] of [[11, 0], [12, 0], [11, 2]] as const) {
        const records = encodeRecordBatch({ records: [{ value: `v${pid}-${seq}` }, { value: `w${pid}-${seq}` }], producerId: BigInt(pid), producerEpoch: 3, baseSequence: seq, isTransactional: true })
        const r = await c.request(ApiKeys.Produce, 9, { transactionalId: null, acks: -1, timeoutMs: 5000, topicData: [{ name: 't', partitionData: [{ index: 0, records }] }] })
        expect(r.body.responses[0].partitionResponses[0].errorCode).toBe(0)
      }
    } finally {
      c.close()
      await broker.close()
    }
    // 0-1 and 4-5 are producer 11's, 2-3 producer 12's.
    const log = PartitionLog.open({ dir: join(dataDir, 't-0'), topic: 't', partition: 0, clean: true })
    log.appendTxnMarker({ producerId: 11, producerEpoch: 3, commit: false, coordinatorEpoch: 7, transactionVersion: 1 }) // 6
    log.appendTxnMarker({ producerId: 12, producerEpoch: 3, commit: true, coordinatorEpoch: 7, transactionVersion: 1 }) // 7
    const base = join(dataDir, 't-0', '00000000000000000000')
    await log.close()

    const { stdout } = await javaTool('org.apache.kafka.tools.DumpLogSegments', ['--files', `${base}.log,${base}.txnindex`, '--print-data-log'], { version })
    const markers = stdout.split('\n').filter((l) => l.includes('endTxnMarker'))
    expect(markers).toHaveLength(2)
    expect(markers[0]).toMatch(/offset: 6 .*endTxnMarker: ABORT coordinatorEpoch: 7/)
    expect(markers[1]).toMatch(/offset: 7 .*endTxnMarker: COMMIT coordinatorEpoch: 7/)
    const controlBatches = stdout.split('\n').filter((l) => l.startsWith('baseOffset:') && l.includes('isControl: true'))
    expect(controlBatches).toHaveLength(2)
    for (const l of controlBatches) expect(l).toMatch(/baseSequence: -1 .*producerEpoch: 3 .*isTransactional: true isControl: true .*isvalid: true/)
    expect(stdout).not.toMatch(/isvalid: false/)
    // Producer 11 aborted 0..6; producer 12 was still open from 2 when it did.
    expect(stdout).toContain('version: 0 producerId: 11 firstOffset: 0 lastOffset: 6 lastStableOffset: 2')
    expect(stdout.split('\n').filter((l) => l.startsWith('version: 0 producerId:'))).toHaveLength(1)
  })

  it('the Java consumer with isolation.level=read_committed skips aborted records and stops at the open transaction', async (ctx) => {
    if (skip !== undefined) ctx.skip(skip)
    const dir = mkdtempSync(join(tmpdir(), 'tidelog-txn-java-'))
    const produce = async (c: RawClient, value: string, txn?: { pid: number; seq: number }) => {
      const records = encodeRecordBatch({
        records: [{ value }],
        ...(txn === undefined ? {} : { producerId: BigInt(txn.pid), producerEpoch: 0, baseSequence: txn.seq, isTransactional: true }),
      })
      const r = await c.request(ApiKeys.Produce, 9, { transactionalId: null, acks: -1, timeoutMs: 5000, topicData: [{ name: 'rc', partitionData: [{ index: 0, records }] }] })
      expect(r.body.responses[0].partitionResponses[0].errorCode).toBe(0)
    }
    const session = async (fn: (c: RawClient, bootstrap: string) => Promise<void>) => {
      const broker = await startBroker({ port: 0, dataDir: dir, logLevel: 'warn' })
      const c = await RawClient.connect('127.0.0.1', broker.port)
      try {
        await fn(c, `127.0.0.1:${broker.port}`)
      } finally {
        c.close()
        await broker.close()
      }
    }
    try {
      await session(async (c) => {
        await c.request(ApiKeys.Metadata, 12, { topics: [{ name: 'rc', topicId: ZERO_UUID }], allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false })
        await produce(c, 'p0') // 0
        await produce(c, 'a1', { pid: 21, seq: 0 }) // 1
        await produce(c, 'b1', { pid: 22, seq: 0 }) // 2
        await produce(c, 'a2', { pid: 21, seq: 1 }) // 3
        await produce(c, 'b2', { pid: 22, seq: 1 }) // 4
        await produce(c, 'p1') // 5
      })
      // The coordinator's markers: abort 21, commit 22.
      const log = PartitionLog.open({ dir: join(dir, 'rc-0'), topic: 'rc', partition: 0, clean: true })
      log.appendTxnMarker({ producerId: 21, producerEpoch: 0, commit: false, coordinatorEpoch: 0, transactionVersion: 1 }) // 6
      log.appendTxnMarker({ producerId: 22, producerEpoch: 0, commit: true, coordinatorEpoch: 0, transactionVersion: 1 }) // 7
      await log.close()
      await session(async (c, bootstrap) => {
        await produce(c, 'p2') // 8
        await produce(c, 'c1', { pid: 23, seq: 0 }) // 9: left open
        await produce(c, 'p3') // 10
        const consume = async (isolation: string) => {
          const { stdout } = await javaTool('org.apache.kafka.tools.consumer.ConsoleConsumer', [
            '--bootstrap-server', bootstrap, '--topic', 'rc', '--partition', '0', '--offset', 'earliest',
            '--timeout-ms', '5000', '--isolation-level', isolation,
          ], { version, timeoutMs: 120_000 })
          return stdout.split('\n').filter((l) => /^[a-z]\d$/.test(l))
        }
        expect(await consume('read_committed')).toEqual(['p0', 'b1', 'b2', 'p1', 'p2'])
        expect(await consume('read_uncommitted')).toEqual(['p0', 'a1', 'b1', 'a2', 'b2', 'p1', 'p2', 'c1', 'p3'])
      })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
