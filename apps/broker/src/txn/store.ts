import { join } from 'node:path'
import { type Reader, Writer } from '@tidelog/protocol'
import { RecordFile, type RecordFileOptions, type SnapshotSink, beginRecord, sealRecord } from '../groups/record-file.js'
import type { Logger } from '../logger.js'
import { TXN_STATES, type TxnState } from './state.js'

/** Where the transaction log lives under the data directory (Kafka's __transaction_state topic). */
export const TXN_DIR = '__transaction_state'
export const TXN_FILE = 'transactions.log'

/** "TLTX" */
const MAGIC = 0x544c5458
const FORMAT_VERSION = 1
const TXN_METADATA = 1
const TXN_TOMBSTONE = 2

/** What one transactional id's record holds (Kafka's TransactionLogValue, plus what KIP-890 part 2 added). */
export interface StoredTxn {
  producerId: bigint
  /** The producer id before an epoch overflow or a KIP-360 re-init; -1 when none. */
  prevProducerId: bigint
  /** TV2: the producer id the client gets once the transaction ending at the last epoch completes; -1 when none. */
  nextProducerId: bigint
  producerEpoch: number
  /** The epoch before the last bump (a retried InitProducerId/EndTxn is recognised by it); -1 when none. */
  lastProducerEpoch: number
  timeoutMs: number
  state: TxnState
  /** topic -> partitions in the open (or completing) transaction. */
  partitions: Map<string, Set<number>>
  /** Groups whose offsets the transaction carries (AddOffsetsToTxn / TxnOffsetCommit v5). */
  groups: Set<string>
  /** -1 when no transaction is open. */
  startTimestamp: number
  lastUpdateTimestamp: number
  /** 1 or 2: the transaction version the client used for the current transaction (KIP-890). */
  clientTransactionVersion: number
}

export class TxnLogFormatError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'TxnLogFormatError'
  }
}

export type TxnStoreOptions = RecordFileOptions

function writeTxn(w: Writer, id: string, t: StoredTxn): void {
  const at = beginRecord(w, TXN_METADATA)
  w.string(id).int64(t.producerId).int64(t.prevProducerId).int64(t.nextProducerId)
  w.int16(t.producerEpoch).int16(t.lastProducerEpoch).int32(t.timeoutMs).int8(TXN_STATES.indexOf(t.state))
  w.int32(t.partitions.size)
  for (const [topic, parts] of t.partitions) {
    w.string(topic).int32(parts.size)
    for (const p of parts) w.int32(p)
  }
  w.int32(t.groups.size)
  for (const g of t.groups) w.string(g)
  w.int64(BigInt(t.startTimestamp)).int64(BigInt(t.lastUpdateTimestamp)).int8(t.clientTransactionVersion)
  sealRecord(w, at)
}

function readTxn(r: Reader): StoredTxn {
  const producerId = r.int64()
  const prevProducerId = r.int64()
  const nextProducerId = r.int64()
  const producerEpoch = r.int16()
  const lastProducerEpoch = r.int16()
  const timeoutMs = r.int32()
  const stateIndex = r.int8()
  const state = TXN_STATES[stateIndex]
  if (state === undefined) r.fail(`unknown transaction state ${stateIndex}`)
  const partitions = new Map<string, Set<number>>()
  const topics = r.int32()
  if (topics < 0) r.fail('negative topic count')
  for (let i = 0; i < topics; i++) {
    const topic = r.string()
    const n = r.int32()
    if (n < 0) r.fail('negative partition count')
    const parts = new Set<number>()
    for (let j = 0; j < n; j++) parts.add(r.int32())
    partitions.set(topic, parts)
  }
  const ng = r.int32()
  if (ng < 0) r.fail('negative group count')
  const groups = new Set<string>()
  for (let i = 0; i < ng; i++) groups.add(r.string())
  const startTimestamp = Number(r.int64())
  const lastUpdateTimestamp = Number(r.int64())
  const clientTransactionVersion = r.int8()
  return {
    producerId,
    prevProducerId,
    nextProducerId,
    producerEpoch,
    lastProducerEpoch,
    timeoutMs,
    state: state!,
    partitions,
    groups,
    startTimestamp,
    lastUpdateTimestamp,
    clientTransactionVersion,
  }
}

export function copyTxn(t: StoredTxn): StoredTxn {
  return { ...t, partitions: new Map([...t.partitions].map(([k, v]) => [k, new Set(v)])), groups: new Set(t.groups) }
}

/**
 * The transaction log: the last state of every transactional id, durable
 * before the coordinator acts on it (a PrepareCommit is on disk before any
 * marker is written, so a crash in between completes the commit on restart).
 */
export class TransactionStore extends RecordFile {
  private readonly txns = new Map<string, StoredTxn>()

  private constructor(dir: string, logger: Logger, opts: TxnStoreOptions) {
    super(dir, TXN_FILE, logger, { magic: MAGIC, version: FORMAT_VERSION, kind: 'transaction log', formatError: (m) => new TxnLogFormatError(m) }, opts)
  }

  /** Loads `<dataDir>/__transaction_state/transactions.log` (creating it when absent) and compacts it. */
  static open(dataDir: string, logger: Logger, opts: TxnStoreOptions = {}): TransactionStore {
    const store = new TransactionStore(join(dataDir, TXN_DIR), logger, opts)
    store.openFile()
    return store
  }

  /** Every transactional id's stored state (the coordinator copies it into memory at start). */
  all(): ReadonlyMap<string, StoredTxn> {
    return this.txns
  }

  /** Appends the new state; memory changes only once it is written. Await durable() before acting on it. */
  put(id: string, t: StoredTxn): void {
    const w = new Writer(256)
    writeTxn(w, id, t)
    this.append(w.finish(), 1)
    this.txns.set(id, copyTxn(t))
    this.maybeCompact()
  }

  remove(id: string): void {
    if (!this.txns.has(id)) return
    const w = new Writer(64)
    const at = beginRecord(w, TXN_TOMBSTONE)
    w.string(id)
    sealRecord(w, at)
    this.append(w.finish(), 1)
    this.txns.delete(id)
    this.maybeCompact()
  }

  protected replay(r: Reader): void {
    const type = r.int8()
    const id = r.string()
    if (type === TXN_METADATA) this.txns.set(id, readTxn(r))
    else if (type === TXN_TOMBSTONE) this.txns.delete(id)
    else r.fail(`unknown record type ${type}`)
    if (r.remaining !== 0) r.fail(`${r.remaining} byte(s) after a type ${type} record`)
  }

  protected *liveRecords(sink: SnapshotSink): Generator<void> {
    for (const [id, t] of this.txns) {
      writeTxn(sink.w, id, t)
      yield
    }
  }

  protected loadedSummary(): string {
    return `loaded ${this.txns.size} transactional id(s)`
  }
}
