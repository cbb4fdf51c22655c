/**
 * Records our producer compresses (gzip, snappy, lz4, zstd) are
 * accepted by Apache Kafka and read back by other clients: kcat (librdkafka) for every codec,
 * kafkajs for gzip (the one codec it reads without plugins).
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { Kafka, logLevel } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CompressionName } from '@tidelog/protocol'
import { Producer } from '@tidelog/producer'
import { KAFKA_VERSIONS, peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { kafkaUse, kafkajsVersion, kcatVersion, recordPeer, recordsPeers } from '../helpers/peers.js'

const run = promisify(execFile)
const codecs: CompressionName[] = ['none', 'gzip', 'snappy', 'lz4', 'zstd']
const COUNT = 2_000

describe(`producer codecs read by other clients from Apache Kafka ${KAFKA_VERSIONS.latest}`, () => {
  let kafka: KafkaNode | undefined
  recordsPeers(() => kafkaUse(kafka))
  let skip: string | undefined
  let kcat = ''

  beforeAll(async () => {
    try {
      kafka = await startKafka({ properties: { 'num.partitions': 3 } })
      kcat = kcatVersion()
    } catch (e) {
      skip = peerUnavailable('Apache Kafka and kcat', e) as string
    }
  })
  afterAll(async () => {
    await kafka?.stop()
  })

  const values = (codec: string) => Array.from({ length: COUNT }, (_, i) => `${codec}-${i}-${'payload '.repeat(i % 9)}`)

  for (const codec of codecs) {
    it(`${codec}: kcat reads every record`, async (ctx) => {
      if (skip) return ctx.skip()
      const topic = `producer-${codec}`
      const p = new Producer({ brokers: [kafka!.bootstrap], compression: codec })
      const sent = values(codec)
      await p.send(sent.map((value, i) => ({ topic, key: `k${i % 10}`, value, headers: { i: String(i) } })))
      await p.close()
      recordPeer('kcat', kcat)
      const { stdout } = await run('kcat', ['-C', '-b', kafka!.bootstrap, '-t', topic, '-e', '-q', '-f', '%k|%h|%s\\n'], { maxBuffer: 64 * 1024 * 1024 })
      const lines = stdout.split('\n').filter((l) => l !== '')
      expect(lines).toHaveLength(COUNT)
      const got = new Map(lines.map((l) => {
        const [key, headers, ...rest] = l.split('|')
        return [rest.join('|'), { key, headers }]
      }))
      for (let i = 0; i < COUNT; i++) {
        expect(got.get(sent[i]!)).toEqual({ key: `k${i % 10}`, headers: `i=${i}` })
      }
    })
  }

  it('gzip: kafkajs reads every record', async (ctx) => {
    if (skip) return ctx.skip()
    const topic = 'producer-gzip-kafkajs'
    const p = new Producer({ brokers: [kafka!.bootstrap], compression: 'gzip' })
    const sent = values('kafkajs')
    await p.send(sent.map((value) => ({ topic, value })))
    await p.close()
    recordPeer('kafkajs', kafkajsVersion())
    const client = new Kafka({ brokers: [kafka!.bootstrap], logLevel: logLevel.NOTHING })
    const consumer = client.consumer({ groupId: 'producer-gzip-check' })
    await consumer.connect()
    await consumer.subscribe({ topic, fromBeginning: true })
    const got: string[] = []
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`kafkajs read ${got.length} of ${COUNT}`)), 60_000)
      void consumer.run({
        eachMessage: async ({ message }) => {
          got.push(message.value!.toString())
          if (got.length === COUNT) {
            clearTimeout(timer)
            resolve()
          }
        },
      })
    })
    await consumer.disconnect()
    expect(got.sort()).toEqual([...sent].sort())
  }, 120_000)
})
