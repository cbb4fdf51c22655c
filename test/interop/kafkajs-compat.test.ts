/**
 * The kafkajs programs of test/kafkajs-compat against Apache Kafka 4.4: real kafkajs 2.2.4 and
 * @tidelog/kafkajs (only the import differs) must observe the same records, offsets, commits
 * and admin answers.
 */
import * as real from 'kafkajs'
import * as ours from '@tidelog/kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { aclsProgram } from '../kafkajs-compat/acls.js'
import { adminProgram } from '../kafkajs-compat/admin.js'
import { eventsProgram } from '../kafkajs-compat/events.js'
import { consumerProgram } from '../kafkajs-compat/consumer.js'
import { producerProgram } from '../kafkajs-compat/producer.js'
import { transactionsProgram } from '../kafkajs-compat/transactions.js'
import type { KafkaModule } from '../kafkajs-compat/types.js'
import { KAFKA_VERSIONS, peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { kafkaUse, kafkajsVersion, recordPeer, recordsPeers } from '../helpers/peers.js'

const tidelog = ours as unknown as KafkaModule
const version = KAFKA_VERSIONS.latest

describe(`kafkajs programs on Apache Kafka ${version}: kafkajs 2.2.4 and @tidelog/kafkajs observe the same`, () => {
  let kafka: KafkaNode | undefined
  let skip: string | undefined
  recordsPeers(() => kafkaUse(kafka))

  beforeAll(async () => {
    try {
      // ACLs on (for the ACL program), with the unauthenticated principal, the programs' and the
      // controller's, as super user: everything is allowed and ACLs are still stored and listed.
      const properties = { 'group.initial.rebalance.delay.ms': 300, 'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer', 'super.users': 'User:ANONYMOUS' }
      kafka = await startKafka({ version, properties })
    } catch (e) {
      skip = peerUnavailable(`Apache Kafka ${version}`, e)
    }
  })

  afterAll(async () => {
    await kafka?.stop()
  })

  for (const [area, program] of [
    ['producer', producerProgram],
    ['consumer', consumerProgram],
    ['admin', adminProgram],
    ['transactions', transactionsProgram],
    ['acls', aclsProgram],
    ['events', eventsProgram],
  ] as const) {
    it(area, async (ctx) => {
      if (skip) return ctx.skip()
      recordPeer('kafkajs', kafkajsVersion())
      const brokers = [kafka!.bootstrap]
      const expected = await program(real, brokers, `real-${area}`)
      const actual = await program(tidelog, brokers, `ours-${area}`)
      expect(actual).toEqual(expected)
    })
  }
})

// Kafka 3.9 has no transaction version 2 (KIP-890): the native producer adds partitions with
// AddPartitionsToTxn and offsets with AddOffsetsToTxn there, as kafkajs always does.
describe(`the kafkajs transactions program on Apache Kafka ${KAFKA_VERSIONS.previous} (transaction version 1): kafkajs 2.2.4 and @tidelog/kafkajs observe the same`, () => {
  let kafka: KafkaNode | undefined
  let skip: string | undefined
  recordsPeers(() => kafkaUse(kafka))

  beforeAll(async () => {
    try {
      kafka = await startKafka({ version: KAFKA_VERSIONS.previous, properties: { 'group.initial.rebalance.delay.ms': 300 } })
    } catch (e) {
      skip = peerUnavailable(`Apache Kafka ${KAFKA_VERSIONS.previous}`, e)
    }
  })

  afterAll(async () => {
    await kafka?.stop()
  })

  it('transactions', async (ctx) => {
    if (skip) return ctx.skip()
    recordPeer('kafkajs', kafkajsVersion())
    const brokers = [kafka!.bootstrap]
    const expected = await transactionsProgram(real, brokers, 'real-tv1')
    const actual = await transactionsProgram(tidelog, brokers, 'ours-tv1')
    expect(actual).toEqual(expected)
  })
})
