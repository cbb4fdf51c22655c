import { ErrorCodes, type ProduceRequest } from '@tidelog/protocol'
import type { BrokerContext } from '../context.js'
import { abortableFor } from './errors.js'

// Record batch v2 header fields (KIP-98): where the producer id, epoch and attributes sit.
const ATTRIBUTES_AT = 21
const PRODUCER_ID_AT = 43
const PRODUCER_EPOCH_AT = 51
const BATCH_HEADER_BYTES = 61
const TRANSACTIONAL_BIT = 0x10

export interface TransactionalProduce {
  /** The error for this partition's batch (NONE to append it); sync, before the append. */
  errorFor(topic: string, partition: number, records: Buffer): number
  /** Resolves once any transaction-log writes of this request are as durable as the flush policy asks. */
  durable(): Promise<void> | undefined
  /** v12 only: the implicit add would meet a transaction still completing, so the request should wait and try again. */
  shouldRetry(): boolean
}

/**
 * Produce's error for a coordinator answer: a fenced producer is told
 * INVALID_PRODUCER_EPOCH (the produce path never answers PRODUCER_FENCED), and
 * a transaction still completing NOT_ENOUGH_REPLICAS, which every client
 * retries (Kafka's mapping of CONCURRENT_TRANSACTIONS for Produce, KIP-890).
 */
function produceError(code: number): number {
  if (code === ErrorCodes.PRODUCER_FENCED) return ErrorCodes.INVALID_PRODUCER_EPOCH
  if (code === ErrorCodes.CONCURRENT_TRANSACTIONS || code === ErrorCodes.COORDINATOR_NOT_AVAILABLE) return ErrorCodes.NOT_ENOUGH_REPLICAS
  return code
}

/** transaction.partition.verification.enable: a dynamic broker config in Kafka, so this node's or the cluster default's value wins over the startup one. */
function verificationEnabled(broker: BrokerContext): boolean {
  const { node, clusterDefault } = broker.topics.dynamic.layers
  const v = node['transaction.partition.verification.enable'] ?? clusterDefault['transaction.partition.verification.enable']
  return v === undefined ? broker.config.transactionPartitionVerificationEnable : v.toLowerCase() === 'true'
}

/**
 * The transactional hooks of Produce. v12 (transaction version 2) adds each
 * partition to the transaction as it is written; up to v11, with
 * transaction.partition.verification.enable (Kafka 3.6+'s default), a
 * partition must already be in the producer's open transaction, else
 * TRANSACTION_ABORTABLE from v11, INVALID_TXN_STATE below (KIP-890 part 1: a
 * late write of an ended transaction cannot slip into the next one).
 */
export function transactionalProduce(broker: BrokerContext, req: ProduceRequest, version: number): TransactionalProduce {
  const id = req.transactionalId!
  const implicit = version >= 12
  let wrote = false
  return {
    errorFor(topic, partition, records) {
      if (records.length < BATCH_HEADER_BYTES || (records.readInt16BE(ATTRIBUTES_AT) & TRANSACTIONAL_BIT) === 0) return ErrorCodes.NONE
      const producerId = records.readBigInt64BE(PRODUCER_ID_AT)
      const producerEpoch = records.readInt16BE(PRODUCER_EPOCH_AT)
      if (implicit) {
        wrote = true
        return produceError(broker.txns.addNow(id, producerId, producerEpoch, [{ name: topic, partitions: [partition] }], null, 2))
      }
      if (!verificationEnabled(broker)) return ErrorCodes.NONE
      return abortableFor(produceError(broker.txns.verify(id, producerId, producerEpoch, topic, partition)), version, 11)
    },
    shouldRetry() {
      return implicit && broker.txns.completing(id)
    },
    durable() {
      if (!wrote) return undefined
      return broker.txns.durable(id).then((code) => {
        if (code !== ErrorCodes.NONE) throw new Error(`transactional id ${id}: the transaction log is not durable`)
      })
    },
  }
}
