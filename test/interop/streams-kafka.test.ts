/**
 * @tidelog/streams' KafkaStreams runtime against Apache Kafka: the word count of
 * packages/streams/test/kafka-streams.test.ts (there on the tidelog broker), here on a real
 * Kafka, which must accept the internal topics as Kafka Streams configures them, run the group,
 * and give back the changelog a restarted instance restores from.
 */
import { afterAll, beforeAll, describe, it } from 'vitest'
import { KAFKA_VERSIONS, peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { kafkaUse, recordsPeers } from '../helpers/peers.js'
import { wordCountScenario } from '../../packages/streams/test/helpers/wordcount.js'

describe(`KafkaStreams (at_least_once) on Apache Kafka ${KAFKA_VERSIONS.latest}`, () => {
  let kafka: KafkaNode | undefined
  let skip: string | undefined
  recordsPeers(() => kafkaUse(kafka))

  beforeAll(async () => {
    try {
      kafka = await startKafka({ properties: { 'group.initial.rebalance.delay.ms': 0 } })
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
})
