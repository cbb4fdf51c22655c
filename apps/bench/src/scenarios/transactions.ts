// T1 (transactional produce) and T2 (exactly-once copy): issue 11's transaction benchmarks,
// every contender on both brokers, side by side in the same rounds.
import { transactionalMessageCopier } from '../clients/java.js'
import type { CopyResult, Job, ProduceResult, ProducerSettings } from '../clients/jobs.js'
import { runChild } from '../clients/run-child.js'
import { createTopic, deleteTopic, type BrokerHandle, type BrokerKind } from '../env/brokers.js'
import type { ScenarioResult, Suite } from '../types.js'
import { BASE, CHUNK, matrix, produceOnce, rowsOf, SETTINGS_NOTE, topicName, wants, WINDOW } from './clients.js'

/** Like P2 (acks=all, idempotent, linger 5 ms, 16 KiB batches, no compression) for everyone. */
const T1_SETTINGS: ProducerSettings = { ...BASE, acks: -1, idempotent: true }
/** Issue 11: commit every 100 ms. */
const COMMIT_EVERY_MS = 100
/** TransactionalMessageCopier's default --transaction-size. */
const TXN_SIZE = 200

// tidelog-idempotent: our producer without transactions, same settings (the >= 0.8x goal).
const T1_CONTENDERS = ['tidelog', 'tidelog-idempotent', 'kafkajs', 'tidelog-kafkajs', 'java'] as const
type T1Contender = (typeof T1_CONTENDERS)[number]
const T2_CONTENDERS = ['tidelog', 'kafkajs', 'tidelog-kafkajs', 'java'] as const
// tidelog-defaults: the tidelog copier at its producer's defaults (16 KiB batches, linger 5 ms),
// against the Java tool at its own settings: each at its best documented settings (issue 17).
type T2Contender = (typeof T2_CONTENDERS)[number] | 'tidelog-defaults'

// --quick runs in CI: only the contenders its goals compare, on the tidelog broker, small runs.
const QUICK_SKIP = { kafka: 'left out of --quick (its Java cells alone take half a minute); the full run has it' }
function sizes(quick: boolean) {
  return quick
    ? { produce: 20_000, produceWarmup: 2_000, copy: 1_000, t1: ['tidelog', 'tidelog-idempotent', 'java'] as T1Contender[], t2: ['tidelog', 'java'] as T2Contender[] }
    : { produce: 200_000, produceWarmup: 30_000, copy: 10_000, t1: [...T1_CONTENDERS], t2: [...T2_CONTENDERS, 'tidelog-defaults'] as T2Contender[] }
}

let seq = 0

function t1Once(b: BrokerHandle, client: T1Contender, n: ReturnType<typeof sizes>) {
  const transaction = { transactionalId: `bench-t1-${client}-${process.pid}-${++seq}`, durationMs: COMMIT_EVERY_MS }
  if (client === 'tidelog-idempotent') return produceOnce(b, 'tidelog', n, T1_SETTINGS, 300_000)
  return produceOnce(b, client, n, T1_SETTINGS, 300_000, transaction)
}

export const transactions: Suite = {
  name: 'transactions',
  description: 'T1 transactional produce (commit every 100 ms) vs idempotent produce and the Java producer; T2 exactly-once copy vs TransactionalMessageCopier',
  ids: ['T1', 'T2'],
  async run(ctx) {
    const n = sizes(ctx.quick)
    const rows: ScenarioResult[] = []
    if (wants(ctx, 'T1')) {
      ctx.log(`T1: transactional produce, commit every ${COMMIT_EVERY_MS} ms`)
      const m = await matrix(ctx, 'T1', n.t1, (b, client) => t1Once(b, client, n), ctx.quick ? QUICK_SKIP : {})
      rows.push(
        ...rowsOf(
          m,
          { id: 'T1', title: `transactional produce, a commit every ${COMMIT_EVERY_MS} ms, ${n.produce.toLocaleString('en')} records after ${n.produceWarmup.toLocaleString('en')} uncounted`, unit: 'records/s', higherIsBetter: true },
          'rate',
          n.t1,
          ['java', 'tidelog'],
          [
            SETTINGS_NOTE(T1_SETTINGS),
            `in transactions: begin, send for ${COMMIT_EVERY_MS} ms, commit (Java: ProducerPerformance --transaction-duration-ms ${COMMIT_EVERY_MS}); tidelog-idempotent is the tidelog producer with the same settings and no transactions`,
            `Node clients hand over ${CHUNK} records per send() call with ${WINDOW} calls awaiting acknowledgement; kafkajs and @tidelog/kafkajs send through producer.transaction()`,
          ],
        ),
      )
    }
    if (wants(ctx, 'T2')) {
      ctx.log(`T2: exactly-once copy, ${TXN_SIZE} records per transaction`)
      const inputs = new Map<BrokerKind, string>()
      const input = async (b: BrokerHandle): Promise<string> => {
        let topic = inputs.get(b.kind)
        if (topic !== undefined) return topic
        topic = topicName('t2-in')
        await createTopic(b, topic, 1)
        const fill: Job = { kind: 'produce', client: 'tidelog', bootstrap: b.bootstrap, topic, records: n.copy, warmupRecords: 0, chunk: CHUNK, window: WINDOW, settings: BASE }
        await runChild<ProduceResult>(fill, 300_000)
        inputs.set(b.kind, topic)
        return topic
      }
      const m = await matrix(ctx, 'T2', n.t2, async (b, client: T2Contender) => {
        const from = await input(b)
        const output = topicName('t2-out')
        await createTopic(b, output, 1)
        const ids = { groupId: `bench-t2-${client}-${++seq}`, transactionalId: `bench-t2-${client}-${process.pid}-${seq}` }
        try {
          if (client === 'java') {
            const r = await transactionalMessageCopier(b.bootstrap, { input: from, output, records: n.copy, txnSize: TXN_SIZE, ...ids })
            return { rate: r.records / (r.ms / 1000) }
          }
          const defaults = client === 'tidelog-defaults'
          const job: Job = { kind: 'copy', client: defaults ? 'tidelog' : client, bootstrap: b.bootstrap, topic: from, output, records: n.copy, txnSize: TXN_SIZE, producerDefaults: defaults, ...ids }
          const r = await runChild<CopyResult>(job, 300_000)
          return { rate: r.records / (r.ms / 1000) }
        } finally {
          await deleteTopic(b, output)
        }
      }, ctx.quick ? QUICK_SKIP : {})
      for (const [kind, topic] of inputs) await deleteTopic(await ctx.brokers.get(kind), topic)
      rows.push(
        ...rowsOf(
          m,
          { id: 'T2', title: `exactly-once copy (consume-transform-produce) of ${n.copy.toLocaleString('en')} records, at most ${TXN_SIZE} per transaction`, unit: 'records/s', higherIsBetter: true },
          'rate',
          n.t2.filter((c) => c !== 'tidelog-defaults'),
          ['java', 'tidelog'],
          [
            `Java: Kafka's TransactionalMessageCopier (manual assignment, read_committed, max.poll.records ${TXN_SIZE}, batch.size 512, 5 in flight); tidelog: the same loop on its Consumer and Producer with the same producer settings`,
            `kafkajs and @tidelog/kafkajs: eachBatch, a transaction per ${TXN_SIZE} records of a batch with sendOffsets, as kafkajs documents (kafkajs has no batch.size); timed from the first poll (the first batch, after the group join) to the last commit`,
          ],
        ),
      )
      if (n.t2.includes('tidelog-defaults')) {
        rows.push(
          ...rowsOf(
            m,
            { id: 'T2.defaults', title: `exactly-once copy of ${n.copy.toLocaleString('en')} records, ${TXN_SIZE} per transaction, each copier at its own settings`, unit: 'records/s', higherIsBetter: true },
            'rate',
            ['tidelog-defaults', 'java'] as T2Contender[],
            [],
            ["the T2 loop with the tidelog producer's defaults (batch 16 KiB, linger 5 ms, 5 in flight) against TransactionalMessageCopier, whose settings are fixed (batch.size 512)"],
          ),
        )
      }
    }
    return rows
  },
}
