/**
 * The Jepsen-style transaction checker (test/jepsen/txn-checker.ts) at CI size: about 2,000
 * transactions over 4 partitions from 3 writers (kafkajs on Apache Kafka; on tidelog one kafkajs
 * writer and two of our own @tidelog/producer, all through test/helpers/fault-proxy.ts, which
 * cuts, stalls and half-closes our producer's connections mid-request), with crashes mid-transaction, two
 * producers racing on one transactional id, abandoned transactions left to their timeout,
 * and the broker restarted twice mid-run: killed with SIGKILL (tidelog), or stopped cleanly
 * (Apache Kafka: after a SIGKILL of a single-node Kafka 4.4 under these kafkajs producers, the
 * checker saw every partition's LSO stay below its high watermark for minutes, i.e. hanging
 * transactions; without restarts Kafka passes with no violation, which is what validates the
 * checker). Checked: no aborted read, no lost committed
 * write, no duplicate, no torn transaction, read_committed never backwards, the LSO never
 * regresses, nothing hanging at the end (read back by Java's read_committed ConsoleConsumer). Against Apache Kafka 4.4 first (the checker is
 * known right), then tidelog-broker. A short case puts our producer through the same proxy in
 * front of Kafka 4.4 (which advertises the proxy's port): 200 transactions, no broker restart.
 * The full-size run is `node --import tsx test/jepsen/run.ts`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin } from '@tidelog/client'
import { peerUnavailable } from '../helpers/kafka.js'
import { kafkajsVersion, recordPeer } from '../helpers/peers.js'
import { type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.js'
import { runChecker } from '../jepsen/txn-checker.js'
import { TIDELOG_WRITER_CLIENT_ID } from '../jepsen/writers.js'
import { createTopic, javaToolsUse, knownFail, startTarget, type TargetName, type TxnTarget } from './transactions-targets.js'

const SEED = 20261201
/**
 * About one chunk in 250 of our producer's connections is struck: tens of faults of each kind in
 * a run, each costing at most a reconnect or a stall. kafkajs's connections are left alone:
 * kafkajs 2.2.4 keeps a cut response's partial bytes across its reconnect and then crashes the
 * process (ERR_BUFFER_OUT_OF_BOUNDS in Connection.processData), a bug of its own, seen by the
 * full-size run. It still meets the broker kills.
 */
const FAULTS = { perChunk: 0.004, stallMs: [50, 1_000] as const, clientIds: (id: string | null) => id === TIDELOG_WRITER_CLIENT_ID }
/** The short Kafka case: fewer transactions, so a higher rate for faults to strike in it at all. */
const KAFKA_FAULTED = 200
const KAFKA_FAULTS = { ...FAULTS, perChunk: 0.02 }

for (const targetName of ['Apache Kafka', 'tidelog'] as TargetName[]) {
  describe(`transaction checker against ${targetName}`, () => {
    let target: TxnTarget | undefined
    let proxy: FaultProxy | undefined
    let skip: string | undefined
    beforeAll(async () => {
      try {
        // The broker advertises the proxy, so every connection (bootstrap, leader, coordinator) goes through it.
        let broker = { host: '127.0.0.1', port: 0 }
        proxy = await startFaultProxy({ target: () => broker, seed: SEED })
        target = await startTarget(targetName, { advertisedPort: proxy.port })
        broker = { host: '127.0.0.1', port: Number(target.bootstrap.split(':')[1]) }
      } catch (e) {
        skip = peerUnavailable(targetName, e) as string
      }
    })
    afterAll(async () => {
      await proxy?.close()
      await target?.stop()
    })
    const fails = knownFail(targetName)
    const restart = targetName === 'tidelog' ? 'kill' : 'clean'
    const faulty = targetName === 'tidelog'
    ;(fails ? it.fails : it)(`2,000 transactions with crashes, fencing races, timeouts${faulty ? ', connection cuts, stalls and half-closes' : ''} and broker ${restart === 'kill' ? 'kill -9' : 'clean restarts'}: no anomaly${fails ? ' (known-fail #11: tidelog serves no EndTxn yet)' : ''}`, async (ctx) => {
      if (skip) return ctx.skip()
      const t = target!
      await createTopic(t.bootstrap, 'checker', 4)
      const result = await runChecker({
        bootstrap: `${proxy!.host}:${proxy!.port}`, directBootstrap: t.bootstrap,
        topic: 'checker', partitions: 4, transactions: 2_000, writers: 3, seed: SEED,
        clients: faulty ? ['kafkajs', 'tidelog', 'tidelog'] : ['kafkajs'],
        faults: faulty ? { proxy: proxy!, rates: FAULTS } : undefined,
        killBroker: () => t.restart(restart), brokerKills: 2,
      })
      console.log(`checker on ${targetName}: ${JSON.stringify({ ...result, violations: result.violations.length })}`)
      const kinds = new Map<string, string[]>()
      for (const v of result.violations) {
        const kind = v.replace(/^txn \d+: |^partition \d+: /, '').replace(/\d+/g, 'N')
        kinds.set(kind, [...(kinds.get(kind) ?? []), v])
      }
      for (const [kind, list] of kinds) console.log(`${list.length} x ${kind}; e.g. ${list.slice(0, 3).join(' | ')}`)
      expect(result.violations.slice(0, 30)).toEqual([])
      expect(result.transactions).toBe(2_000)
      expect(result.brokerKills).toBe(2)
      expect(result.outcomes.committed).toBeGreaterThan(1_000)
      for (const a of ['crash', 'race', 'abandon', 'abort'] as const) expect(result.actions[a], a).toBeGreaterThan(0)
      expect(result.lsoSamples).toBeGreaterThan(0)
      if (faulty) {
        // The writers share one sequence, so the split follows their speed (ours meet the faults): each must do a fair part.
        expect(result.byClient.tidelog, 'transactions by our producer').toBeGreaterThan(200)
        expect(result.byClient.kafkajs, 'transactions by kafkajs').toBeGreaterThan(200)
        for (const kind of ['cut', 'stall', 'halfClose']) {
          expect((result.faults[`${kind}:request`] ?? 0) + (result.faults[`${kind}:response`] ?? 0), `${kind} faults struck`).toBeGreaterThan(0)
        }
      }
      for (const u of [...t.peers(), { peer: 'kafkajs' as const, version: kafkajsVersion() }, await javaToolsUse()]) recordPeer(u.peer, u.version)
    }, 900_000)

    // The same faults against Apache Kafka, short: what the tidelog case proves of our producer
    // holds against Kafka's own coordinator (its answers to a retried, cut or late request).
    if (targetName === 'Apache Kafka') it(`${KAFKA_FAULTED} transactions of our producer through connection cuts, stalls and half-closes: no anomaly`, async (ctx) => {
      if (skip) return ctx.skip()
      const t = target!
      const admin = new Admin({ brokers: [t.bootstrap] })
      await admin.createTopics([{ name: 'checker-faults', partitions: 4, replicationFactor: 1 }]).finally(() => admin.close())
      const result = await runChecker({
        bootstrap: `${proxy!.host}:${proxy!.port}`, directBootstrap: t.bootstrap,
        topic: 'checker-faults', partitions: 4, transactions: KAFKA_FAULTED, writers: 4, seed: SEED + 1,
        clients: ['tidelog'],
        faults: { proxy: proxy!, rates: KAFKA_FAULTS },
      })
      console.log(`checker on ${targetName} through the fault proxy: ${JSON.stringify({ ...result, violations: result.violations.length })}`)
      expect(result.violations.slice(0, 30)).toEqual([])
      expect(result.transactions).toBe(KAFKA_FAULTED)
      expect(result.byClient.tidelog).toBe(KAFKA_FAULTED)
      expect(result.outcomes.committed).toBeGreaterThan(KAFKA_FAULTED / 3)
      for (const a of ['crash', 'abort'] as const) expect(result.actions[a], a).toBeGreaterThan(0)
      const struck = Object.values(result.faults).reduce((a, b) => a + b, 0)
      expect(struck, 'faults struck').toBeGreaterThan(0)
      for (const u of [...t.peers(), await javaToolsUse()]) recordPeer(u.peer, u.version)
    }, 300_000)
  })
}
