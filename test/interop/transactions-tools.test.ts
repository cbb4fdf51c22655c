/**
 * kafka-transactions.sh (org.apache.kafka.tools.TransactionsCommand) against the broker:
 * a Java producer killed with SIGKILL mid-transaction (transaction.timeout.ms 10 min) leaves
 * its transaction open; `list`, `describe` and `describe-producers` show it as Kafka does;
 * `find-hanging` does not call it hanging (its coordinator still knows the partition);
 * `abort` ends it on the partition. A second transaction written to the partition without
 * AddPartitionsToTxn (partition verification off, as before KIP-890) is hanging: unknown to
 * its coordinator, `find-hanging` finds it and `abort` ends it. A read_committed
 * ConsoleConsumer then reads past both: only the record written after them.
 *
 * Run against Apache Kafka 4.4 first, then unchanged against tidelog-broker. The tools run one
 * after another in one JVM (transactions-java/tool-session.ts), not one JVM each.
 */
import { fileURLToPath } from 'node:url'
import { rmSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ApiKeys, encodeRecordBatch } from '@tidelog/protocol'
import { compileJava, KAFKA_VERSIONS, peerUnavailable, spawnJavaTool } from '../helpers/kafka.js'
import { readToEnd } from '../helpers/read-to-end.js'
import { recordPeer } from '../helpers/peers.js'
import { RawClient } from '../helpers/raw-client.js'
import { javaToolsUse, knownFail, startTarget, type TargetName, type TxnTarget } from './transactions-targets.js'
import { ToolSession } from './transactions-java/tool-session.js'

const SOURCE = fileURLToPath(new URL('./transactions-java/OpenTransactionProducer.java', import.meta.url))
const TOPIC = 'hang'
const KILLED_ID = 'killed-producer'
const RAW_ID = 'raw-hanging'

async function waitFor<T>(what: string, probe: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: T | undefined
  for (;;) {
    last = await probe()
    if (ok(last)) return last
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`)
    await new Promise((r) => setTimeout(r, 500))
  }
}

for (const targetName of ['Apache Kafka', 'tidelog'] as TargetName[]) {
  describe(`kafka-transactions.sh against ${targetName}`, () => {
    let target: TxnTarget | undefined
    let classes: string | undefined
    let tools: ToolSession | undefined
    let skip: string | undefined
    beforeAll(async () => {
      try {
        target = await startTarget(targetName, { partitionVerification: false })
        classes = await compileJava([SOURCE])
        // Every kafka-transactions.sh and ConsoleConsumer run below in one JVM of Kafka 4.4's tools.
        tools = await ToolSession.start(KAFKA_VERSIONS.latest)
      } catch (e) {
        skip = peerUnavailable(targetName, e) as string
      }
    })
    afterAll(async () => {
      await tools?.close()
      await target?.stop()
      if (classes) rmSync(classes, { recursive: true, force: true })
    })

    const fails = knownFail(targetName)
    ;(fails ? it.fails : it)(`list, describe, describe-producers, find-hanging and abort a transaction left open by a killed producer and a hanging one${fails ? ' (known-fail #11: tidelog serves no EndTxn yet)' : ''}`, async (ctx) => {
      if (skip) return ctx.skip()
      const t = target!
      const tool = (args: string[]) => tools!.transactions(t.bootstrap, args)
      const created = await tools!.run('org.apache.kafka.tools.TopicCommand', ['--bootstrap-server', t.bootstrap, '--create', '--topic', TOPIC, '--partitions', '1', '--replication-factor', '1'])
      expect(created.code, created.stdout + created.error).toBe(0)

      // 1. A Java producer writes 5 records in a transaction and is killed before it ends it.
      const proc = await spawnJavaTool('OpenTransactionProducer', [t.bootstrap, TOPIC, '0', KILLED_ID, '5', '600000'], { classpath: [classes!] })
      let out = ''
      let err = ''
      proc.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-8_000)))
      await new Promise<void>((resolve, reject) => {
        proc.stdout!.on('data', (d: Buffer) => {
          out += d.toString()
          if (out.includes('SENT 5')) resolve()
        })
        proc.once('exit', (code) => reject(new Error(`producer exited ${code} before sending:\n${err}`)))
      })
      const exited = new Promise((r) => proc.once('exit', r))
      proc.kill('SIGKILL')
      await exited

      const listed = await tool(['list'])
      const mine = listed.find((r) => r.TransactionalId === KILLED_ID)
      expect(mine, JSON.stringify(listed)).toMatchObject({ TransactionState: 'Ongoing' })
      const producerId = mine!.ProducerId!
      expect(Number(producerId)).toBeGreaterThanOrEqual(0)

      const [described] = await tool(['describe', '--transactional-id', KILLED_ID])
      expect(described).toMatchObject({ TransactionalId: KILLED_ID, ProducerId: producerId, TransactionState: 'Ongoing', TransactionTimeoutMs: '600000' })
      expect(described!.TopicPartitions).toBe(`${TOPIC}-0`)

      const producers = await tool(['describe-producers', '--topic', TOPIC, '--partition', '0'])
      expect(producers.find((r) => r.ProducerId === producerId), JSON.stringify(producers)).toMatchObject({ CurrentTransactionStartOffset: '0' })

      // Open, but its coordinator still lists the partition: not hanging.
      expect(await tool(['find-hanging', '--topic', TOPIC, '--max-transaction-timeout', '0'])).toEqual([])

      // 2. A transaction the coordinator never heard of on this partition: hanging.
      const raw = await RawClient.connect('127.0.0.1', Number(t.bootstrap.split(':')[1]))
      try {
        const { body: pid } = await raw.request(ApiKeys.InitProducerId, 4, { transactionalId: RAW_ID, transactionTimeoutMs: 60_000, producerId: -1n, producerEpoch: -1 })
        expect(pid.errorCode).toBe(0)
        const { body: produced } = await raw.request(ApiKeys.Produce, 11, {
          transactionalId: RAW_ID,
          acks: -1,
          timeoutMs: 10_000,
          topicData: [{ name: TOPIC, partitionData: [{ index: 0, records: encodeRecordBatch({ producerId: pid.producerId, producerEpoch: pid.producerEpoch, baseSequence: 0, isTransactional: true, records: [{ key: null, value: 'hanging-0' }, { key: null, value: 'hanging-1' }] }) }] }],
        })
        const pr = produced.responses[0].partitionResponses[0]
        expect(pr.errorCode, 'a transactional Produce v11 with partition verification off is appended').toBe(0)
        const hangingStart = String(pr.baseOffset)
        expect(Number(hangingStart)).toBeGreaterThanOrEqual(5)

        const hanging = await tool(['find-hanging', '--topic', TOPIC, '--max-transaction-timeout', '0'])
        expect(hanging.map((r) => [r.Topic, r.Partition, r.ProducerId, r.StartOffset])).toEqual([[TOPIC, '0', String(pid.producerId), hangingStart]])

        // 3. abort both on the partition (WriteTxnMarkers from the tool, not the coordinator).
        await tool(['abort', '--topic', TOPIC, '--partition', '0', '--start-offset', '0'])
        await tool(['abort', '--topic', TOPIC, '--partition', '0', '--start-offset', hangingStart])
        await waitFor('no open transaction on the partition', () => tool(['describe-producers', '--topic', TOPIC, '--partition', '0']),
          (rows) => rows.every((r) => r.CurrentTransactionStartOffset === 'None' || r.CurrentTransactionStartOffset === '-1'))
        expect(await tool(['find-hanging', '--topic', TOPIC, '--max-transaction-timeout', '0'])).toEqual([])

        // 4. read_committed reads past both aborted transactions.
        const { body: after } = await raw.request(ApiKeys.Produce, 11, {
          transactionalId: null,
          acks: -1,
          timeoutMs: 10_000,
          topicData: [{ name: TOPIC, partitionData: [{ index: 0, records: encodeRecordBatch({ records: [{ key: null, value: 'after' }] }) }] }],
        })
        expect(after.responses[0].partitionResponses[0].errorCode).toBe(0)
      } finally {
        raw.close()
      }
      // The first record read_committed sees is the one after both aborted transactions; nothing else is there (ours, to the end offsets).
      expect(await tools!.readCommitted(t.bootstrap, TOPIC, 1)).toEqual(['after'])
      expect((await readToEnd([t.bootstrap], TOPIC, 1))[0]!.map((r) => r.value)).toEqual(['after'])
      for (const u of [...t.peers(), await javaToolsUse()]) recordPeer(u.peer, u.version)
    }, 600_000)
  })
}
