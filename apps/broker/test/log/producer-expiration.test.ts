import { join } from 'node:path'
import { ApiKeys, ZERO_UUID } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { PartitionLog, startBroker } from '../../src/index.js'
import { makeBatch } from '../helpers/batches.js'
import { RawClient } from '../helpers/raw-client.js'
import { tempDir } from '../helpers/tmp.js'
import { trackOpened } from '../helpers/opened.js'

const open = trackOpened()

const T = 1_700_000_000_000
const idempotent = (seq: number, ts: number) => makeBatch(2, { producerId: 7n, producerEpoch: 0, baseSequence: seq, baseTimestamp: ts })

describe('producer.id.expiration.ms', () => {
  it('forgets a producer once its last batch is that old, and keeps one that wrote since', () => {
    const dir = join(tempDir(), 't-0')
    const log = PartitionLog.open({ dir, topic: 't', partition: 0, producerIdExpirationMs: 1000, now: T })
    log.append(idempotent(0, T))
    log.append(makeBatch(1, { producerId: 8n, producerEpoch: 0, baseSequence: 0, baseTimestamp: T + 500 }))
    expect(log.producers.size).toBe(2)
    expect(log.removeExpiredProducers(T + 999)).toBe(0)
    expect(log.removeExpiredProducers(T + 1000)).toBe(1)
    expect(log.producers.size).toBe(1)
    // Producer 7 is unknown now and, as in Kafka since KIP-360, may continue at any sequence.
    expect(log.append(idempotent(9, T + 1000))).toMatchObject({ duplicate: false, baseOffset: 3 })
    expect(log.removeExpiredProducers(T + 1500)).toBe(1)
    expect(log.producers.size).toBe(1)
  })

  it('drops expired producers when loading the snapshot or replaying the log', async () => {
    const dir = join(tempDir(), 't-0')
    let log = PartitionLog.open({ dir, topic: 't', partition: 0, producerIdExpirationMs: 1000, now: T })
    log.append(idempotent(0, T))
    log.append(makeBatch(1, { producerId: 8n, producerEpoch: 0, baseSequence: 0, baseTimestamp: T + 900 }))
    await log.close()
    // From the snapshot written at close.
    log = PartitionLog.open({ dir, topic: 't', partition: 0, clean: true, producerIdExpirationMs: 1000, now: T + 1200 })
    expect(log.producers.size).toBe(1)
    expect(log.producers.check(8, 0, 0, 0)).toMatchObject({ firstOffset: 2 })
    await log.close()
    // From the batch headers (an unclean start replays the log).
    log = PartitionLog.open({ dir, topic: 't', partition: 0, clean: false, recoveryPoint: 0, producerIdExpirationMs: 1000, now: T + 2000 })
    expect(log.producers.size).toBe(0)
    await log.close()
  })

  it('is applied by the broker on its check interval', async () => {
    const b = await startBroker({ port: 0, dataDir: tempDir(), producerIdExpirationMs: 300, producerIdExpirationCheckIntervalMs: 50 })
    open.brokers.push(b)
    const c = await RawClient.connect(b.port)
    open.clients.push(c)
    await c.request(ApiKeys.Metadata, 12, { topics: [{ name: 't', topicId: ZERO_UUID }], allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false })
    const pid = (await c.request(ApiKeys.InitProducerId, 4, { transactionalId: null, transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 })).producerId as bigint
    const send = async (seq: number) => {
      const r = await c.request(ApiKeys.Produce, 9, {
        transactionalId: null, acks: -1, timeoutMs: 1000,
        topicData: [{ name: 't', partitionData: [{ index: 0, records: makeBatch(2, { producerId: pid, producerEpoch: 0, baseSequence: seq }) }] }],
      })
      return r.responses[0].partitionResponses[0] as { errorCode: number; baseOffset: bigint }
    }
    expect(await send(0)).toMatchObject({ errorCode: 0, baseOffset: 0n })
    // Within the expiration time a retry is recognised and answered with its original offsets.
    expect(await send(0)).toMatchObject({ errorCode: 0, baseOffset: 0n })
    await new Promise((r) => setTimeout(r, 600))
    // Expired: the same batch is new to the broker.
    expect(await send(0)).toMatchObject({ errorCode: 0, baseOffset: 2n })
  })
})
