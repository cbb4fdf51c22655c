import { ApiKeys, encodeRecordBatch, encodeRequestFrame } from '@tidelog/protocol'

/** A Produce v9 body (acks=1) of one record of `valueBytes` to partition 0 of `topic`. */
export const produceBody = (topic: string, valueBytes: number) => ({
  transactionalId: null,
  acks: 1,
  timeoutMs: 5000,
  topicData: [{ name: topic, partitionData: [{ index: 0, records: encodeRecordBatch({ records: [{ key: null, value: Buffer.alloc(valueBytes, 1) }] }) }] }],
})

/** The bytes a produce quota counts for it, as Kafka's RequestChannel.Request.sizeInBytes: header and body, not the length prefix (RawClient's client id). */
export const countedBytes = (topic: string, valueBytes: number): number =>
  encodeRequestFrame({ apiKey: ApiKeys.Produce, apiVersion: 9, correlationId: 1, clientId: 'raw' }, produceBody(topic, valueBytes)).length - 4

/** QuotaUtils.throttleTime for `total` bytes measured over `windowMs` against `bound` bytes/s (0 within the bound). */
export function kafkaThrottle(total: number, windowMs: number, bound: number): number {
  const rate = total / (windowMs / 1000)
  return rate <= bound ? 0 : Math.round(((rate - bound) / bound) * windowMs)
}
