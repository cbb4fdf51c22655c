/**
 * Client quota metrics on /metrics, as Kafka's kafka.server:type=Produce|Request|ControllerMutation
 * MBeans with user and client-id tags read through the Prometheus JMX exporter: a produce over
 * producer_byte_rate and topics created over controller_mutation_rate show their rates, throttle
 * times and tokens, and the figures are the ones the broker's own accounting holds.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ApiKeys, ErrorCodes } from '@tidelog/protocol'
import { type Broker, startBroker } from '../src/index.js'
import { makeBatch } from './helpers/batches.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'

const clients: RawClient[] = []
const brokers: Broker[] = []
afterEach(async () => {
  for (const c of clients.splice(0)) c.close()
  for (const b of brokers.splice(0)) await b.close()
})

/** Samples of one metric family, by their label text. */
function samples(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`).exec(line)
    if (m !== null) out.set(m[1] ?? '', Number(m[2]))
  }
  return out
}

describe('client quota metrics', () => {
  it('a throttled producer and a throttled topic creator appear with their rate, throttle time and tokens', async () => {
    const broker = await startBroker({ port: 0, dataDir: tempDir(), consolePort: 0, quotaWindowNum: 5, quotaWindowSizeSeconds: 1, controllerQuotaWindowNum: 5, controllerQuotaWindowSizeSeconds: 1 })
    brokers.push(broker)
    const client = await RawClient.connect(broker.port)
    clients.push(client)
    const scrape = async () => (await fetch(`${broker.console!.url}metrics`)).text()
    // Before any quota nothing is counted, so no family is shown.
    expect(await scrape()).not.toMatch(/kafka_server_produce_byte_rate/)

    const topic = await client.request(ApiKeys.CreateTopics, 7, { topics: [{ name: 'p', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }], timeoutMs: 5000, validateOnly: false })
    expect(topic.topics[0].errorCode).toBe(ErrorCodes.NONE)
    const set = await client.request(ApiKeys.AlterClientQuotas, 1, {
      entries: [
        {
          entity: [{ entityType: 'client-id', entityName: 'raw' }],
          ops: [
            { key: 'producer_byte_rate', value: 1024, remove: false },
            { key: 'controller_mutation_rate', value: 1, remove: false },
          ],
        },
      ],
      validateOnly: false,
    })
    expect(set.entries[0].errorCode).toBe(ErrorCodes.NONE)
    const produced = await client.request(ApiKeys.Produce, 9, {
      transactionalId: null,
      acks: 1,
      timeoutMs: 1000,
      topicData: [{ name: 'p', partitionData: [{ index: 0, records: makeBatch(4, { valueSize: 2500 }) }] }],
    })
    expect(produced.responses[0].partitionResponses[0].errorCode).toBe(ErrorCodes.NONE)
    expect(produced.throttleTimeMs).toBeGreaterThan(0)

    // Another connection (same client id, so the same sensors): the produce's mute holds only the first.
    const creator = await RawClient.connect(broker.port)
    clients.push(creator)
    const created = await creator.request(ApiKeys.CreateTopics, 7, {
      topics: [{ name: 'm', numPartitions: 6, replicationFactor: 1, assignments: [], configs: [] }, { name: 'n', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 5000,
      validateOnly: false,
    })
    // A burst of 5 (1/s over 5 windows): m takes the bucket to -1, n is refused.
    expect(created.topics.map((t: { errorCode: number }) => t.errorCode)).toEqual([ErrorCodes.NONE, ErrorCodes.THROTTLING_QUOTA_EXCEEDED])
    const text = await scrape()
    const labels = '{user="",client_id="raw"}'
    const produce = broker.quotaAccounts().find((a) => a.type === 'produce')!
    expect(samples(text, 'kafka_server_produce_byte_rate').get(labels)).toBeGreaterThan(1024)
    expect(samples(text, 'kafka_server_produce_byte_rate').get(labels)).toBeLessThanOrEqual(produce.recorded)
    // One throttle answered in the window: its average is that throttle.
    expect(samples(text, 'kafka_server_produce_throttle_time').get(labels)).toBe(produce.throttledMs)
    const mutation = broker.quotaAccounts().find((a) => a.type === 'mutation')!
    expect(mutation).toMatchObject({ recorded: 6, violations: 1 })
    expect(samples(text, 'kafka_server_controllermutation_mutation_rate').get(labels)).toBeGreaterThan(0)
    expect(samples(text, 'kafka_server_controllermutation_throttle_time').get(labels)).toBe(mutation.throttledMs)
    const tokens = samples(text, 'kafka_server_controllermutation_tokens').get(labels)!
    // -1 after m, refilling at 1/s since: below the burst of 5 whatever the machine's load.
    expect(tokens).toBeGreaterThanOrEqual(-1)
    expect(tokens).toBeLessThan(5)
    // No fetch or request quota is set for this client: those families stay out.
    expect(text).not.toMatch(/kafka_server_fetch_byte_rate|kafka_server_request_request_time/)
    expect(text).toMatch(/# TYPE kafka_server_produce_byte_rate gauge/)
  })
})
