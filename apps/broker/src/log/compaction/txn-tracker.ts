import type { AbortedTxn } from '../txn-index.js'

/**
 * What the cleaner knows of transactions while it walks batches in offset
 * order (Kafka's CleanedTransactionMetadata): which producers are inside an
 * aborted transaction (from the `.txnindex` entries of the segments cleaned),
 * and which have had a batch of a not-aborted transaction read since their
 * last marker. That decides, as in Kafka, that aborted data goes, that an
 * abort marker stays while data of its transaction is still being removed,
 * and that a commit marker may go once no batch of its transaction is left.
 */
export class TxnTracker {
  private readonly pending: AbortedTxn[]
  private next = 0
  /** producer id -> the aborted transaction it is in, and whether a batch of it was read this pass. */
  private readonly aborted = new Map<number, { txn: AbortedTxn; observed: boolean }>()
  private readonly committed = new Set<number>()

  constructor(abortedTxns: readonly AbortedTxn[]) {
    this.pending = [...abortedTxns].sort((a, b) => a.firstOffset - b.firstOffset)
  }

  private consumeUpTo(offset: number): void {
    while (this.next < this.pending.length && this.pending[this.next]!.firstOffset <= offset) {
      const t = this.pending[this.next++]!
      this.aborted.set(t.producerId, { txn: t, observed: false })
    }
  }

  /** A transactional data batch: true when it belongs to an aborted transaction (drop it). */
  onDataBatch(producerId: number, lastOffset: number): boolean {
    this.consumeUpTo(lastOffset)
    const a = this.aborted.get(producerId)
    if (a !== undefined) {
      a.observed = true
      return true
    }
    this.committed.add(producerId)
    return false
  }

  /**
   * A marker (control batch): true when the transaction it ends has no data
   * left, so the marker itself may go once its delete horizon has passed.
   * `kept` receives the aborted transaction whose marker must stay indexed.
   */
  onMarker(producerId: number, lastOffset: number, commit: boolean | undefined, kept: AbortedTxn[]): boolean {
    this.consumeUpTo(lastOffset)
    // An empty control batch is a marker an earlier pass already emptied.
    if (commit === undefined) return true
    if (!commit) {
      const a = this.aborted.get(producerId)
      this.aborted.delete(producerId)
      if (a !== undefined && a.observed) {
        kept.push(a.txn)
        return false
      }
      return true
    }
    return !this.committed.delete(producerId)
  }
}
