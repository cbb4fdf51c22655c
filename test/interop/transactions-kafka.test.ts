/**
 * Issue 11, client side, against Apache Kafka itself: our transactional producer on Kafka 4.4
 * (transaction.version 2, KIP-890) and 3.9.1 (version 1). Commit, abort, transaction(),
 * fencing by a second producer with the same transactionalId, the coordinator's timeout
 * abort, and the exactly-once copier killed and restarted; every result checked by Kafka's own
 * Java consumer with isolation.level=read_committed and by ours. The same tests run against the
 * tidelog broker (in-process, transaction version 2), checked by the same Java consumer.
 * Kafka 3.9's own transaction tools (kafka-transactions.sh, TransactionalMessageCopier), run in
 * one JVM (transactions-java/tool-session.ts), against Kafka 3.9 and then the tidelog broker.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import * as consumerPkg from '@tidelog/consumer'
import { Consumer } from '@tidelog/consumer'
import * as producerPkg from '@tidelog/producer'
import { ProducerFencedError, Producer, TransactionAbortableError } from '@tidelog/producer'
import { ProtocolError } from '@tidelog/protocol'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCopier } from '../helpers/eos-copier.js'
import { KAFKA_VERSIONS, javaClientVersion, javaTool, peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { kafkaUse, recordPeer, recordsPeers } from '../helpers/peers.js'
import { readToEnd } from '../helpers/read-to-end.js'
import { copierProof, ToolSession, transactionsToolProof } from './transactions-java/tool-session.js'

const PARTITIONS = 3

/** Our read_committed (or read_uncommitted) consumer: the values of every record up to the end offsets, per partition. */
async function readOurs(brokers: string[], topic: string, isolationLevel: 'read_committed' | 'read_uncommitted' = 'read_committed'): Promise<Map<number, string[]>> {
  const parts = await readToEnd(brokers, topic, PARTITIONS, { isolationLevel })
  return new Map(parts.flatMap((records, p) => (records.length > 0 ? [[p, records.map((r) => r.value)] as const] : [])))
}

/**
 * Kafka's ConsoleConsumer with isolation.level=read_committed: the first `n` records it reads,
 * per partition, in order (it exits at `n`; fewer and it gives up after 8 s without a record).
 * With n = 0 it waits those 8 s to show that nothing is readable. That nothing lies beyond the
 * n records is shown by readOurs, which reads to the end offsets.
 */
async function readJava(kafka: KafkaNode, topic: string, n: number): Promise<Map<number, string[]>> {
  recordPeer('Java client', kafka.runtimeVersion)
  const { stdout } = await kafka.java(
    'org.apache.kafka.tools.consumer.ConsoleConsumer',
    ['--bootstrap-server', kafka.bootstrap, '--topic', topic, '--from-beginning', '--isolation-level', 'read_committed',
      '--max-messages', String(Math.max(n, 1)), '--timeout-ms', '8000', '--property', 'print.partition=true'],
    { timeoutMs: 120_000 },
  ).catch((e: { stdout?: string }) => ({ stdout: e.stdout ?? '' }))
  const out = new Map<number, string[]>()
  for (const line of stdout.split('\n')) {
    const m = /^Partition:(\d+)\t(.*)$/.exec(line)
    if (m === null) continue
    const list = out.get(Number(m[1])) ?? []
    list.push(m[2]!)
    out.set(Number(m[1]), list)
  }
  return out
}

/** The first ```ts block of the root README's "Transactions" section, run as written but for its imports and broker address. */
async function runReadmeExample(bootstrap: string): Promise<unknown[][]> {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
  const code = /```ts\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf('## Transactions')))?.[1]
  if (code === undefined) throw new Error('README.md has no ```ts block under "## Transactions"')
  const modules: Record<string, unknown> = { '@tidelog/consumer': consumerPkg, '@tidelog/producer': producerPkg }
  const body = code
    .replace("const brokers = ['127.0.0.1:9092']", `const brokers = [${JSON.stringify(bootstrap)}]`)
    .replace(/^import \{([^}]+)\} from '([^']+)'$/gm, (_, names: string, from: string) => `const {${names}} = modules[${JSON.stringify(from)}]`)
  const printed: unknown[][] = []
  const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => (...a: unknown[]) => Promise<void>
  await new AsyncFunction('modules', 'console', body)(modules, { log: (...args: unknown[]) => printed.push(args) })
  return printed
}

const flat = (m: Map<number, string[]>): string[] => [...m.values()].flat().sort()

/** The tidelog broker in-process, shaped as the KafkaNode the tests use (bootstrap, its Java tools). */
async function startTidelog(): Promise<KafkaNode> {
  const dir = mkdtempSync(join(tmpdir(), 'tidelog-txn-'))
  const broker = await startBroker({ port: 0, dataDir: dir, numPartitions: PARTITIONS, transactionAbortTimedOutTransactionCleanupIntervalMs: 500 })
  const bootstrap = `127.0.0.1:${broker.port}`
  return {
    version: 'tidelog',
    runtimeVersion: await javaClientVersion(),
    host: '127.0.0.1',
    port: broker.port,
    bootstrap,
    dir,
    listeners: { PLAINTEXT: broker.port },
    async stop() {
      await broker.close()
      rmSync(dir, { recursive: true, force: true })
    },
    java: (mainClass, args, opts) => javaTool(mainClass, args, { ...(opts?.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}), ...(opts?.input !== undefined ? { input: opts.input } : {}) }),
  }
}

/** One JVM with Kafka 3.9's tools for the whole file, started by the first test that needs it. */
let tools39: Promise<ToolSession> | undefined
const sharedTools39 = (): Promise<ToolSession> => (tools39 ??= ToolSession.start(KAFKA_VERSIONS.previous))
afterAll(async () => {
  await (await tools39?.catch(() => undefined))?.close()
})

const TARGETS = [[KAFKA_VERSIONS.latest, 2], [KAFKA_VERSIONS.previous, 1], ['tidelog', 2]] as const
for (const [version, tv] of TARGETS) describe(version === 'tidelog' ? `transactional producer against the tidelog broker (TV${tv})` : `transactional producer against Apache Kafka ${version} (TV${tv})`, () => {
  let kafka: KafkaNode | undefined
  let skip: string | undefined
  let brokers: string[]
  let admin: Admin
  // The tidelog run records only the Java consumer that checks it (readJava), not Apache Kafka.
  recordsPeers(() => (version === 'tidelog' ? undefined : kafkaUse(kafka)))

  beforeAll(async () => {
    if (version === 'tidelog') {
      kafka = await startTidelog()
      brokers = [kafka.bootstrap]
      admin = new Admin({ brokers })
      return
    }
    try {
      kafka = await startKafka({
        version,
        // The coordinator looks for timed-out transactions every 10 s by default.
        properties: { 'num.partitions': PARTITIONS, 'transaction.abort.timed.out.transaction.cleanup.interval.ms': 500 },
      })
    } catch (e) {
      skip = peerUnavailable('Apache Kafka', e) as string
      return
    }
    brokers = [kafka.bootstrap]
    admin = new Admin({ brokers })
  })
  afterAll(async () => {
    await admin?.close()
    await kafka?.stop()
  })

  const topic = async (name: string): Promise<string> => {
    await admin.createTopics([{ name, partitions: PARTITIONS, replicationFactor: 1 }])
    return name
  }

  it('commit, abort and transaction(): readers see exactly the committed records, in order', async (ctx) => {
    if (skip) return ctx.skip()
    const t = await topic('txn-basic')
    const p = new Producer({ brokers, transactionalId: 'basic' })
    const records = (tag: string) => Array.from({ length: 30 }, (_, i) => ({ topic: t, partition: i % PARTITIONS, value: `${tag}-${String(i).padStart(2, '0')}` }))
    try {
      await p.initTransactions()
      expect(p.transactionVersion).toBe(tv)
      p.beginTransaction()
      await p.send(records('c1'))
      await p.commitTransaction()
      p.beginTransaction()
      await p.send(records('a1'))
      await p.abortTransaction()
      await p.transaction(async () => void (await p.send(records('c2'))))
      const boom = new Error('boom')
      await expect(p.transaction(async () => {
        await p.send(records('a2'))
        throw boom
      })).rejects.toBe(boom)
      expect(p.transactionState).toBe('READY')
    } finally {
      await p.close()
    }
    const committed = [...records('c1'), ...records('c2')]
    const expected = new Map<number, string[]>()
    for (const r of committed) expected.set(r.partition, [...(expected.get(r.partition) ?? []), r.value])
    expect(await readOurs(brokers, t)).toEqual(expected)
    expect(await readJava(kafka!, t, committed.length)).toEqual(expected)
    // The aborted records were written: read_uncommitted sees them.
    const all = flat(await readOurs(brokers, t, 'read_uncommitted'))
    expect(all.filter((v) => v.startsWith('a'))).toHaveLength(60)
  })

  it('a second producer with the same transactionalId fences the first: ProducerFencedError, its records never read', async (ctx) => {
    if (skip) return ctx.skip()
    const t = await topic('txn-fenced')
    const first = new Producer({ brokers, transactionalId: 'fence' })
    const second = new Producer({ brokers, transactionalId: 'fence' })
    try {
      await first.initTransactions()
      first.beginTransaction()
      await first.send({ topic: t, partition: 0, value: 'zombie' })
      await second.initTransactions()
      second.beginTransaction()
      await second.send({ topic: t, partition: 0, value: 'live' })
      await second.commitTransaction()
      const err = await first.commitTransaction().catch((e: unknown) => e)
      expect(err).toBeInstanceOf(ProducerFencedError)
      expect(first.transactionState).toBe('FATAL_ERROR')
      await expect(first.send({ topic: t, value: 'x' })).rejects.toBeInstanceOf(ProducerFencedError)
    } finally {
      await first.close()
      await second.close()
    }
    expect(flat(await readJava(kafka!, t, 1))).toEqual(['live'])
    expect(flat(await readOurs(brokers, t))).toEqual(['live'])
  })

  it('the coordinator aborts a transaction open past transactionTimeoutMs; the producer sees it on commit', async (ctx) => {
    if (skip) return ctx.skip()
    const t = await topic('txn-timeout')
    const p = new Producer({ brokers, transactionalId: 'timeout', transactionTimeoutMs: 1500 })
    let err: unknown
    try {
      await p.initTransactions()
      p.beginTransaction()
      await p.send({ topic: t, partition: 0, value: 'late' })
      // The abort marker moves the last stable offset past the record.
      const deadline = Date.now() + 60_000
      for (;;) {
        const [o] = await admin.listOffsets([{ topic: t, partition: 0, timestamp: 'latest' }], { isolationLevel: 'read_committed' })
        if (o !== undefined && o.offset >= 2n) break
        if (Date.now() > deadline) throw new Error('the coordinator did not abort the timed-out transaction')
        await new Promise((r) => setTimeout(r, 200))
      }
      err = await p.commitTransaction().catch((e: unknown) => e)
    } finally {
      await p.close()
    }
    console.log(`${version}: commit after the timeout failed with ${(err as Error)?.constructor?.name}: ${(err as Error)?.message}`)
    // Java's EndTxn handler: each of these ends the transaction without a commit.
    expect(err).toBeInstanceOf(ProtocolError)
    expect(['PRODUCER_FENCED', 'INVALID_TXN_STATE', 'TRANSACTION_ABORTABLE']).toContain((err as ProtocolError).type)
    if (!(err instanceof TransactionAbortableError)) expect(p.transactionState).toBe('FATAL_ERROR')
    expect(flat(await readOurs(brokers, t))).toEqual([])
    expect(flat(await readJava(kafka!, t, 0))).toEqual([])
  })

  it('the exactly-once copier, killed and aborting mid-way, copies every input record once, in order', async (ctx) => {
    if (skip) return ctx.skip()
    const input = await topic('copier-in')
    const output = await topic('copier-out')
    const n = 3000
    const plain = new Producer({ brokers, lingerMs: 1, batchBytes: 2048 })
    const values = Array.from({ length: n }, (_, i) => ({ topic: input, partition: i % PARTITIONS, value: `r${String(i).padStart(5, '0')}` }))
    await plain.send(values)
    await plain.close()
    const run = (o: Partial<Parameters<typeof runCopier>[0]>) => runCopier({ brokers, input, output, groupId: 'eos-copier', transactionalId: 'eos-copier-1', ...o })
    // Killed with its 3rd transaction open; restarted, it aborts every 4th and dies again; then it finishes.
    await run({ dieAt: 3 })
    await run({ dieAt: 9, abortWhen: (k) => k % 4 === 0 })
    const expected = new Map<number, string[]>()
    for (const r of values) expected.set(r.partition, [...(expected.get(r.partition) ?? []), r.value])
    const done = new AbortController()
    const last = run({ signal: done.signal, abortWhen: (k) => k % 5 === 0 })
    // Done when the group's committed offsets reach the end of the input.
    const deadline = Date.now() + 120_000
    for (;;) {
      const offsets = await admin.fetchOffsets('eos-copier', [input]).catch(() => [])
      const total = offsets.filter((o) => o.topic === input).reduce((s, o) => s + Number(o.offset), 0)
      if (total >= n) break
      if (Date.now() > deadline) throw new Error(`the copier committed ${total} of ${n}`)
      await new Promise((r) => setTimeout(r, 300))
    }
    done.abort()
    await last
    expect(await readJava(kafka!, output, n)).toEqual(expected)
    expect(await readOurs(brokers, output)).toEqual(expected)
  })

  it('a consumer asking for committed offsets waits out a transaction holding offsets for them (requireStable, UNSTABLE_OFFSET_COMMIT retried)', async (ctx) => {
    if (skip) return ctx.skip()
    const t = await topic('txn-unstable')
    const p = new Producer({ brokers, transactionalId: 'unstable' })
    const c = new Consumer({ brokers, groupId: 'unstable-group', retryBackoffMs: 50, retryBackoffMaxMs: 200 })
    try {
      await p.initTransactions()
      p.beginTransaction()
      await p.send({ topic: t, partition: 0, value: 'v' })
      // A standalone group: generation -1 and no member id, as Java's new ConsumerGroupMetadata(groupId).
      await p.sendOffsetsToTransaction([{ topic: t, partition: 0, offset: 7n }], { groupId: 'unstable-group', generationId: -1, memberId: '', groupInstanceId: null })
      let committedTxn = false
      const asked = c.committed([{ topic: t, partition: 0 }]).then((r) => ({ r, afterCommit: committedTxn }))
      // The fetch must still be waiting: the offsets are pending in the open transaction.
      const early = await Promise.race([asked.then(() => 'answered'), new Promise((r) => setTimeout(r, 1500, 'waiting'))])
      expect(early).toBe('waiting')
      committedTxn = true
      await p.commitTransaction()
      const { r, afterCommit } = await asked
      expect(afterCommit).toBe(true)
      expect(r.map((o) => o.offset)).toEqual([7n])
    } finally {
      await c.close()
      await p.close()
    }
  })

  // Kafka 3.9's own tools (TV1 and the request versions of 3.9): on Kafka 3.9 (the test known right), then unchanged on tidelog.
  if (version !== KAFKA_VERSIONS.latest) describe(`Kafka ${KAFKA_VERSIONS.previous}'s transaction tools`, () => {
    let tools: ToolSession | undefined
    beforeAll(async () => {
      if (skip) return
      try {
        tools = await sharedTools39()
      } catch (e) {
        skip = peerUnavailable(`Java tools ${KAFKA_VERSIONS.previous}`, e) as string
      }
    })
    const recordTools = async () => recordPeer('Java client', await javaClientVersion(KAFKA_VERSIONS.previous))

    it('kafka-transactions.sh list, describe, describe-producers, find-hanging and abort: an abandoned and a hanging transaction', async (ctx) => {
      if (skip) return ctx.skip()
      await transactionsToolProof(tools!, kafka!.bootstrap, admin, 'tools39-hang')
      await recordTools()
    })

    it('TransactionalMessageCopier --group-mode --use-group-metadata with random aborts copies every record once, in order', async (ctx) => {
      if (skip) return ctx.skip()
      await copierProof(tools!, kafka!.bootstrap, admin, 'tools39-copy', 300)
      await recordTools()
    })
  })

  // The README example runs once, on the latest Kafka.
  if (tv === 2) it("the root README's Transactions example runs as written and copies exactly once", async (ctx) => {
    if (skip) return ctx.skip()
    await admin.createTopics([{ name: 'input', partitions: 1, replicationFactor: 1 }, { name: 'output', partitions: PARTITIONS, replicationFactor: 1 }])
    const plain = new Producer({ brokers })
    await plain.send(Array.from({ length: 5 }, (_, i) => ({ topic: 'input', value: `in-${i}` })))
    await plain.close()
    expect(await runReadmeExample(kafka!.bootstrap)).toEqual([['copied 5 records']])
    expect(flat(await readJava(kafka!, 'output', 5))).toEqual(['in-0', 'in-1', 'in-2', 'in-3', 'in-4'])
    expect(flat(await readOurs(brokers, 'output'))).toEqual(['in-0', 'in-1', 'in-2', 'in-3', 'in-4'])
    const offsets = await admin.fetchOffsets('copier', ['input'])
    expect(offsets.map((o) => o.offset)).toEqual([5n])
  })
})
