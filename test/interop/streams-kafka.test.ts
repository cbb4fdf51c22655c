/**
 * @tidelog/streams' KafkaStreams runtime against Apache Kafka: the word count of
 * packages/streams/test/kafka-streams.test.ts (there on the tidelog broker), here on a real
 * Kafka, which must accept the internal topics as Kafka Streams configures them, run the group,
 * and give back the changelog a restarted instance restores from; and the exactly-once
 * verifier's application under exactly_once_v2 with two stream threads, so Kafka's own
 * transaction and group coordinators take our transactional producers and KIP-447 offsets, and
 * the same verifier with instances killed -9 and restarted (issue 14; on this file's Kafka, so
 * no second one starts).
 */
import { afterAll, beforeAll, describe, it } from 'vitest'
import { KAFKA_VERSIONS, peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { kafkaUse, recordsPeers } from '../helpers/peers.js'
import { wordCountScenario } from '../../packages/streams/test/helpers/wordcount.js'
import { complete, expected, readOutputs, topicsOf, verifierConfig, verifierTopology } from '../../packages/streams/test/helpers/eos-app.js'
import { KillVerifier } from './streams-kill.js'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Admin } from '@tidelog/client'
import { Producer } from '@tidelog/producer'
import { KafkaStreams } from '@tidelog/streams'
import { expect } from 'vitest'

describe(`KafkaStreams (at_least_once, exactly_once_v2) on Apache Kafka ${KAFKA_VERSIONS.latest}`, () => {
  let kafka: KafkaNode | undefined
  let skip: string | undefined
  recordsPeers(() => kafkaUse(kafka))

  beforeAll(async () => {
    try {
      // A killed instance's open transaction is aborted on timeout; Kafka's default sweep (10 s) would stall read_committed readers that long.
      kafka = await startKafka({ properties: { 'group.initial.rebalance.delay.ms': 0, 'transaction.abort.timed.out.transaction.cleanup.interval.ms': 500 } })
    } catch (e) {
      skip = peerUnavailable('Apache Kafka', e) as string
    }
  })

  afterAll(async () => {
    await kafka?.stop()
  })

  it('word count: internal topics created with Kafka Streams\' configs, counts right, the store restored from the changelog after a restart', async (ctx) => {
    if (skip) return ctx.skip(skip)
    await wordCountScenario([kafka!.bootstrap], 'wc-kafka')
  })

  it('exactly_once_v2 with two stream threads: every input echoed once, counts and sums exact, read_committed', async (ctx) => {
    if (skip) return ctx.skip(skip)
    const brokers = [kafka!.bootstrap]
    const t = topicsOf('eosk')
    const admin = new Admin({ brokers })
    const producer = new Producer({ brokers, lingerMs: 0 })
    const stateDir = mkdtempSync(join(tmpdir(), 'tidelog-streams-kafka-eos-'))
    const app = new KafkaStreams(verifierTopology('eosk').build(), verifierConfig(brokers, 'eosk-app', { 'state.dir': stateDir, 'num.stream.threads': 2 }))
    try {
      await admin.createTopics([t.data, t.echo, t.counts, t.sums].map((name) => ({ name, partitions: 2 })))
      await app.start()
      const sent = Array.from({ length: 200 }, (_, i) => ({ key: `k${i % 7}`, value: i }))
      await producer.send(sent.map((r) => {
        const v = Buffer.alloc(8)
        v.writeBigInt64BE(BigInt(r.value))
        return { topic: t.data, key: r.key, value: v }
      }))
      const seen = await readOutputs(brokers, 'eosk', 2, (o) => complete(o, sent), 90_000)
      expect([...seen.echo.values()].every((n) => n === 1)).toBe(true)
      expect(seen.echoed).toBe(200)
      expect(seen.counts).toEqual(expected(sent).counts)
      expect(seen.sums).toEqual(expected(sent).sums)
      // A rebalance may still be settling (eager: revoked tasks are briefly on no thread).
      const settled = Date.now() + 30_000
      const tasks = () => app.metadataForLocalThreads().flatMap((x) => x.activeTasks).sort()
      while (tasks().length < 4 && Date.now() < settled) await new Promise((r) => setTimeout(r, 25))
      expect(tasks()).toEqual(['0_0', '0_1', '1_0', '1_1'])
    } finally {
      await app.close()
      await producer.close()
      await admin.close()
      rmSync(stateDir, { recursive: true, force: true })
    }
  })

  it('exactly_once_v2 with an instance killed -9 and restarted while input flows (the verifier of streams-kill.ts): every input echoed once, counts and sums exact', async (ctx) => {
    if (skip) return ctx.skip(skip)
    const verifier = new KillVerifier([kafka!.bootstrap])
    try {
      await verifier.killAndRestart('kk1', { total: 1000, twice: false })
    } finally {
      await verifier.close()
    }
  }, 150_000)
})
