import { isControlAt, isTransactionalAt, readTxnMarker } from './control-batch.js'
import { BASE_SEQUENCE_AT, LAST_OFFSET_DELTA_AT, MAX_TIMESTAMP_AT, PRODUCER_EPOCH_AT, PRODUCER_ID_AT, readInt64 } from './format.js'
import { type ProducerStateManager, lastSeqOf } from './producer-state.js'
import type { LogSegment } from './segment.js'

/**
 * Rebuilds producer state from the batches at or after `from`, starting in
 * segments[first], onto what a snapshot restored: data batches update the
 * producers and open transactions, markers end them, and each abort marker
 * re-writes its entry in its segment's aborted-transaction index (entries from
 * `from` on are dropped first, so an index written before an unclean stop, or
 * torn by it, ends up as the log says). Each entry's last stable offset is
 * recomputed as it was when its marker was appended.
 */
export function replayProducerState(segments: readonly LogSegment[], first: number, from: number, producers: ProducerStateManager): void {
  for (let i = first; i < segments.length; i++) segments[i]!.txnIndex.truncateFrom(from)
  for (let i = first; i < segments.length; i++) {
    const seg = segments[i]!
    const start = seg.baseOffset >= from ? 0 : (seg.locate(from)?.position ?? seg.size)
    seg.forEachBatch(start, (buf, at, position, size) => {
      const producerId = readInt64(buf, at + PRODUCER_ID_AT)
      if (producerId < 0) return
      const firstOffset = readInt64(buf, at)
      const epoch = buf.readInt16BE(at + PRODUCER_EPOCH_AT)
      const timestamp = readInt64(buf, at + MAX_TIMESTAMP_AT)
      if (isControlAt(buf, at)) {
        // The marker's record lies past the header window; markers are rare, read it whole.
        const marker = readTxnMarker(seg.readSync(position, size))
        if (marker === undefined) return
        const done = producers.applyMarker(producerId, epoch, marker.coordinatorEpoch, marker.commit, firstOffset, timestamp)
        if (done?.aborted === true) {
          const unstable = producers.firstUnstableOffset()
          seg.txnIndex.append({ producerId: done.producerId, firstOffset: done.firstOffset, lastOffset: done.lastOffset, lastStableOffset: unstable >= 0 ? unstable : firstOffset + 1 })
        }
        return
      }
      const delta = buf.readInt32BE(at + LAST_OFFSET_DELTA_AT)
      const firstSeq = buf.readInt32BE(at + BASE_SEQUENCE_AT)
      producers.update(
        producerId,
        epoch,
        { firstSeq, lastSeq: lastSeqOf(firstSeq, delta), firstOffset, lastOffset: firstOffset + delta },
        timestamp,
        isTransactionalAt(buf, at),
      )
    })
  }
}
