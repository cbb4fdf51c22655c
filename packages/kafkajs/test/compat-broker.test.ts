import * as real from 'kafkajs'
import * as ours from '@tidelog/kafkajs'
import { describe, expect, it } from 'vitest'
import { startTestBroker } from '../../consumer/test/helpers/broker.js'
import { adminProgram } from '../../../test/kafkajs-compat/admin.js'
import { consumerProgram } from '../../../test/kafkajs-compat/consumer.js'
import { producerProgram } from '../../../test/kafkajs-compat/producer.js'
import type { KafkaModule } from '../../../test/kafkajs-compat/types.js'

const tidelog = ours as unknown as KafkaModule

// The programs of test/kafkajs-compat, run with real kafkajs 2.2.4 and with @tidelog/kafkajs on
// the same in-process broker: what each observes must be the same.
describe('kafkajs programs on our broker: kafkajs 2.2.4 and @tidelog/kafkajs observe the same', () => {
  it('producer: send, sendBatch, partitioners, headers, validation', async () => {
    const { brokers } = await startTestBroker(1)
    const expected = await producerProgram(real, brokers, 'real')
    const actual = await producerProgram(tidelog, brokers, 'ours')
    expect(actual).toEqual(expected)
    if (process.env.SHOW) console.log(JSON.stringify(actual))
  })

  it('consumer: eachMessage, eachBatch with resolveOffset, seek, commitOffsets, pause, events', async () => {
    const { brokers } = await startTestBroker(1)
    const expected = await consumerProgram(real, brokers, 'real')
    const actual = await consumerProgram(tidelog, brokers, 'ours')
    if (process.env.SHOW) console.log(JSON.stringify(actual), JSON.stringify(expected))
    expect(actual).toEqual(expected)
  })

  it('admin: topics, partitions, offsets, configs, groups, records, cluster', async () => {
    const { brokers } = await startTestBroker(1)
    const expected = await adminProgram(real, brokers, 'real')
    const actual = await adminProgram(tidelog, brokers, 'ours')
    if (process.env.SHOW) console.log(JSON.stringify(actual))
    expect(actual).toEqual(expected)
  })
})
