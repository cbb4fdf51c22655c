import * as real from 'kafkajs'
import * as ours from '@tidelog/kafkajs'
import { describe, expect, it } from 'vitest'
import { startTestBroker } from '../../consumer/test/helpers/broker.js'
import { transactionsProgram } from '../../../test/kafkajs-compat/transactions.js'
import type { KafkaModule } from '../../../test/kafkajs-compat/types.js'

const tidelog = ours as unknown as KafkaModule

describe('the kafkajs transactions program on our broker: kafkajs 2.2.4 and @tidelog/kafkajs observe the same', () => {
  it('transaction(): send, sendBatch, commit, abort, isActive, misuse errors; eachBatch copier with sendOffsets; fencing', async () => {
    const expected = await transactionsProgram(real, (await startTestBroker(1)).brokers, 'real')
    if (process.env.SHOW) console.log(JSON.stringify(expected, null, 1))
    const actual = await transactionsProgram(tidelog, (await startTestBroker(1)).brokers, 'ours')
    if (process.env.SHOW) console.log(JSON.stringify(actual, null, 1))
    expect(actual).toEqual(expected)
  }, 120_000)
})
