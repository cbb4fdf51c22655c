/**
 * Kafka's own transaction tools of one release (kafka-transactions.sh's TransactionsCommand,
 * TransactionalMessageCopier, ConsoleConsumer) run in one JVM (ToolSession.java), so the proofs
 * below cost one JVM start per broker instead of one per invocation. Used by
 * transactions-kafka.test.ts for Kafka 3.9's tools (TV1, the older request versions) against
 * Apache Kafka 3.9 and, unchanged, against the tidelog broker.
 */
import { rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { ChildProcess } from 'node:child_process'
import { expect } from 'vitest'
import { Admin } from '@tidelog/client'
import { Producer } from '@tidelog/producer'
import { ApiKeys, encodeRecordBatch } from '@tidelog/protocol'
import { compileJava, spawnJavaTool } from '../../helpers/kafka.js'
import { RawClient } from '../../helpers/raw-client.js'
import { readToEnd } from '../../helpers/read-to-end.js'

const SOURCE = fileURLToPath(new URL('./ToolSession.java', import.meta.url))
const TXN_COMMAND = 'org.apache.kafka.tools.TransactionsCommand'
const VERIFICATION = 'transaction.partition.verification.enable'

/** kafka-transactions.sh's output (a tab-separated table) as rows keyed by the header names. */
export function toolTable(stdout: string): Record<string, string>[] {
  const lines = stdout.split('\n').filter((l) => l.trim() !== '')
  if (lines.length === 0) return []
  const split = (l: string) => l.split('\t').map((c) => c.trim()).filter((c, i, a) => c !== '' || i < a.length - 1)
  const headers = split(lines[0]!)
  return lines.slice(1).map((l) => Object.fromEntries(split(l).map((v, i) => [headers[i] ?? String(i), v])))
}

export class ToolSession {
  private out = ''
  private err = ''
  private waiting: (() => void) | undefined

  private constructor(
    private readonly proc: ChildProcess,
    private readonly classes: string,
  ) {
    proc.stdout!.on('data', (d: Buffer) => {
      this.out += d.toString()
      this.waiting?.()
    })
    proc.stderr!.on('data', (d: Buffer) => (this.err = (this.err + d.toString()).slice(-8_000)))
    proc.once('exit', () => this.waiting?.())
  }

  /** One JVM with `version`'s tools; each call names the broker it runs against. */
  static async start(version: string): Promise<ToolSession> {
    const classes = await compileJava([SOURCE], { version })
    const proc = await spawnJavaTool('ToolSession', [], { version, classpath: [classes] })
    const s = new ToolSession(proc, classes)
    await s.until('=== READY\n', 120_000)
    s.out = ''
    return s
  }

  private async until(marker: string | RegExp, timeoutMs: number): Promise<RegExpExecArray | string> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const m = typeof marker === 'string' ? (this.out.includes(marker) ? marker : null) : marker.exec(this.out)
      if (m !== null) return m
      if (this.proc.exitCode !== null || this.proc.signalCode !== null) throw new Error(`ToolSession exited (${this.proc.exitCode ?? this.proc.signalCode}):\n${this.out}\n${this.err}`)
      if (Date.now() > deadline) throw new Error(`ToolSession: no ${String(marker)} in ${timeoutMs} ms:\n${this.out}\n${this.err}`)
      await new Promise<void>((resolve) => {
        this.waiting = resolve
        setTimeout(resolve, 1_000)
      })
    }
  }

  /** Runs one tool's main class with `args`; resolves with its stdout and exit code (0 when main returned). */
  async run(mainClass: string, args: string[], timeoutMs = 120_000): Promise<{ code: number; stdout: string; error: string }> {
    this.out = ''
    this.proc.stdin!.write(`${[mainClass, ...args].join('\t')}\n`)
    const m = (await this.until(/=== BEGIN\n([\s\S]*)\n=== END (-?\d+) ?(.*)\n/, timeoutMs)) as RegExpExecArray
    return { stdout: m[1]!, code: Number(m[2]), error: m[3]! }
  }

  /** kafka-transactions.sh: its table as rows keyed by the header names. */
  async transactions(bootstrap: string, args: string[]): Promise<Record<string, string>[]> {
    const { code, stdout, error } = await this.run(TXN_COMMAND, ['--bootstrap-server', bootstrap, ...args])
    expect(code, `kafka-transactions.sh ${args.join(' ')}: ${error}\n${stdout}\n${this.err}`).toBe(0)
    return toolTable(stdout)
  }

  /** Java's ConsoleConsumer, read_committed: the first `n` values it reads (it stops there, or after 20 s without a record). */
  async readCommitted(bootstrap: string, topic: string, n: number): Promise<string[]> {
    const { stdout } = await this.run('org.apache.kafka.tools.consumer.ConsoleConsumer', [
      '--bootstrap-server', bootstrap, '--topic', topic, '--from-beginning', '--isolation-level', 'read_committed',
      '--max-messages', String(n), '--timeout-ms', '20000', '--group', `tool-session-${topic}-${Date.now()}`,
    ])
    return stdout.split('\n').filter((l) => l !== '')
  }

  async close(): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      const exited = new Promise((r) => this.proc.once('exit', r))
      this.proc.stdin!.end()
      const timer = setTimeout(() => this.proc.kill('SIGKILL'), 10_000)
      await exited
      clearTimeout(timer)
    }
    rmSync(this.classes, { recursive: true, force: true })
  }
}

async function setVerification(admin: Admin, on: boolean | null): Promise<void> {
  await admin.incrementalAlterConfigs([{ type: 'broker', name: '', configs: [on === null ? { name: VERIFICATION, op: 'delete' } : { name: VERIFICATION, value: String(on), op: 'set' }] }])
}

/**
 * kafka-transactions.sh list / describe / describe-producers / find-hanging / abort, as
 * transactions-tools.test.ts does with 4.4's tools, here with the session's: a transaction left
 * open (added to its coordinator, then abandoned) is listed and described but not hanging; one
 * written while transaction.partition.verification.enable was switched off (dynamically, a
 * cluster-wide default) is unknown to its coordinator, so hanging; `abort` ends both, and a
 * read_committed ConsoleConsumer reads only the record after them.
 */
export async function transactionsToolProof(s: ToolSession, bootstrap: string, admin: Admin, topic: string): Promise<void> {
  await admin.createTopics([{ name: topic, partitions: 1, replicationFactor: 1 }])
  const [host, port] = bootstrap.split(':')
  const raw = await RawClient.connect(host!, Number(port))
  const open = `${topic}-open`
  const hanging = `${topic}-hanging`
  const batch = (pid: { producerId: bigint; producerEpoch: number }, values: string[]) =>
    encodeRecordBatch({ producerId: pid.producerId, producerEpoch: pid.producerEpoch, baseSequence: 0, isTransactional: true, records: values.map((value) => ({ key: null, value })) })
  const produce = async (transactionalId: string | null, records: Buffer) => {
    const { body } = await raw.request(ApiKeys.Produce, 11, { transactionalId, acks: -1, timeoutMs: 10_000, topicData: [{ name: topic, partitionData: [{ index: 0, records }] }] })
    return body.responses[0].partitionResponses[0] as { errorCode: number; baseOffset: bigint }
  }
  // The first request for a transactional id creates __transaction_state on Kafka: ask until its coordinator is ready.
  const initPid = async (transactionalId: string, transactionTimeoutMs: number) => {
    const deadline = Date.now() + 60_000
    for (;;) {
      const { body } = await raw.request(ApiKeys.InitProducerId, 4, { transactionalId, transactionTimeoutMs, producerId: -1n, producerEpoch: -1 })
      if (body.errorCode === 0 || Date.now() > deadline) return body as { errorCode: number; producerId: bigint; producerEpoch: number }
      await raw.request(ApiKeys.FindCoordinator, 4, { keyType: 1, coordinatorKeys: [transactionalId] })
      await new Promise((r) => setTimeout(r, 200))
    }
  }
  let hangingStart = ''
  let openPid = ''
  try {
    // 1. Open on the partition and known to its coordinator (AddPartitionsToTxn), then left: as a killed producer leaves it.
    const a = await initPid(open, 600_000)
    expect(a.errorCode).toBe(0)
    openPid = String(a.producerId)
    const { body: added } = await raw.request(ApiKeys.AddPartitionsToTxn, 3, { v3AndBelowTransactionalId: open, v3AndBelowProducerId: a.producerId, v3AndBelowProducerEpoch: a.producerEpoch, v3AndBelowTopics: [{ name: topic, partitions: [0] }] })
    expect(added.resultsByTopicV3AndBelow[0].resultsByPartition[0].partitionErrorCode).toBe(0)
    expect((await produce(open, batch(a, ['open-0', 'open-1', 'open-2']))).errorCode).toBe(0)

    // 2. Never added: refused while verification is on (KIP-890), appended once it is off.
    const h = await initPid(hanging, 60_000)
    expect(h.errorCode).toBe(0)
    expect((await produce(hanging, batch(h, ['hanging-0']))).errorCode, 'verification refuses a partition never added').not.toBe(0)
    await setVerification(admin, false)
    const deadline = Date.now() + 30_000
    for (;;) {
      const r = await produce(hanging, batch(h, ['hanging-0']))
      if (r.errorCode === 0) {
        hangingStart = String(r.baseOffset)
        break
      }
      if (Date.now() > deadline) throw new Error(`the dynamic ${VERIFICATION}=false never applied: Produce answers ${r.errorCode}`)
      await new Promise((r) => setTimeout(r, 200))
    }
    await setVerification(admin, null)
    expect((await produce(null, encodeRecordBatch({ records: [{ key: null, value: 'after' }] }))).errorCode).toBe(0)
  } finally {
    raw.close()
  }
  expect(hangingStart).toBe('3')

  const listed = await s.transactions(bootstrap, ['list'])
  expect(listed.find((r) => r.TransactionalId === open), JSON.stringify(listed)).toMatchObject({ ProducerId: openPid, TransactionState: 'Ongoing' })
  const [described] = await s.transactions(bootstrap, ['describe', '--transactional-id', open])
  expect(described).toMatchObject({ TransactionalId: open, ProducerId: openPid, TransactionState: 'Ongoing', TransactionTimeoutMs: '600000', TopicPartitions: `${topic}-0` })
  const producers = await s.transactions(bootstrap, ['describe-producers', '--topic', topic, '--partition', '0'])
  expect(producers.find((r) => r.ProducerId === openPid), JSON.stringify(producers)).toMatchObject({ CurrentTransactionStartOffset: '0' })
  const found = await s.transactions(bootstrap, ['find-hanging', '--topic', topic, '--max-transaction-timeout', '0'])
  expect(found.map((r) => [r.Topic, r.Partition, r.StartOffset])).toEqual([[topic, '0', hangingStart]])

  await s.transactions(bootstrap, ['abort', '--topic', topic, '--partition', '0', '--start-offset', '0'])
  await s.transactions(bootstrap, ['abort', '--topic', topic, '--partition', '0', '--start-offset', hangingStart])
  const deadline = Date.now() + 60_000
  for (;;) {
    const rows = await s.transactions(bootstrap, ['describe-producers', '--topic', topic, '--partition', '0'])
    if (rows.every((r) => r.CurrentTransactionStartOffset === 'None' || r.CurrentTransactionStartOffset === '-1')) break
    if (Date.now() > deadline) throw new Error(`transactions still open after abort: ${JSON.stringify(rows)}`)
    await new Promise((r) => setTimeout(r, 300))
  }
  expect(await s.transactions(bootstrap, ['find-hanging', '--topic', topic, '--max-transaction-timeout', '0'])).toEqual([])
  expect(await s.readCommitted(bootstrap, topic, 1)).toEqual(['after'])
  expect((await readToEnd([bootstrap], topic, 1))[0]!.map((r) => r.value)).toEqual(['after'])
}

/**
 * TransactionalMessageCopier of the session's release, --group-mode --use-group-metadata
 * (KIP-447) with random aborts, copies `n` records across 3 partitions; read_committed (Java's
 * ConsoleConsumer and ours) then reads exactly the input, once each, in per-partition order.
 */
export async function copierProof(s: ToolSession, bootstrap: string, admin: Admin, prefix: string, n: number): Promise<void> {
  const input = `${prefix}-in`
  const output = `${prefix}-out`
  await admin.createTopics([{ name: input, partitions: 3, replicationFactor: 1 }, { name: output, partitions: 3, replicationFactor: 1 }])
  const plain = new Producer({ brokers: [bootstrap], lingerMs: 1 })
  const values = Array.from({ length: n }, (_, i) => ({ topic: input, partition: i % 3, value: `v${String(i).padStart(5, '0')}` }))
  await plain.send(values)
  await plain.close()
  const { code, stdout, error } = await s.run('org.apache.kafka.tools.TransactionalMessageCopier', [
    '--broker-list', bootstrap, '--input-topic', input, '--input-partition', '0', '--output-topic', output,
    '--transactional-id', `${prefix}-copier`, '--consumer-group', `${prefix}-group`, '--group-mode', '--use-group-metadata',
    '--transaction-size', '50', '--transaction-timeout', '20000', '--enable-random-aborts', '--max-messages', String(n),
  ], 240_000)
  expect(code, `${error}\n${stdout}`).toBe(0)
  const expected = [0, 1, 2].map((p) => values.filter((v) => v.partition === p).map((v) => v.value))
  expect((await readToEnd([bootstrap], output, 3)).map((part) => part.map((r) => r.value))).toEqual(expected)
  expect((await s.readCommitted(bootstrap, output, n)).sort()).toEqual(values.map((v) => v.value).sort())
}
