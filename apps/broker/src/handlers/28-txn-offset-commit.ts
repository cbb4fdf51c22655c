import { ErrorCodes, TxnOffsetCommit, type TxnOffsetCommitRequest, type TxnOffsetCommitResponse } from '@tidelog/protocol'
import type { OffsetToCommit } from '../groups/coordinator.js'
import { commitTxnOffsets } from '../groups/txn-offsets.js'
import { abortableFor, fencedFor } from '../txn/errors.js'
import { defineHandler } from './types.js'

function respond(req: TxnOffsetCommitRequest, code: (ti: number, pi: number) => number): TxnOffsetCommitResponse {
  return {
    throttleTimeMs: 0,
    topics: req.topics.map((t, ti) => ({ name: t.name, partitions: t.partitions.map((p, pi) => ({ partitionIndex: p.partitionIndex, errorCode: code(ti, pi) })) })),
  }
}

/**
 * TxnOffsetCommit 0-5: a transaction's offsets for a group, pending until its
 * commit marker. The producer must own the transaction and (TV1) have added
 * the group with AddOffsetsToTxn (else TRANSACTION_ABORTABLE from v4,
 * INVALID_TXN_STATE below: KIP-890); v5 (KIP-890 part 2) adds it implicitly.
 * From v3 the group's generation, member id and instance id are checked
 * (KIP-447), fencing a producer of an older generation.
 */
export const txnOffsetCommitHandler = defineHandler({
  api: TxnOffsetCommit,
  minVersion: 0,
  maxVersion: 5,
  async handle(ctx, req): Promise<TxnOffsetCommitResponse> {
    const { txns, topics, groups, logger } = ctx.broker
    const checked =
      ctx.version >= 5
        ? await txns.add(req.transactionalId, req.producerId, req.producerEpoch, [], req.groupId, 2)
        : txns.verifyGroup(req.transactionalId, req.producerId, req.producerEpoch, req.groupId)
    if (checked !== ErrorCodes.NONE) {
      const code = abortableFor(fencedFor(checked, ctx.version, 3), ctx.version, 4)
      return respond(req, () => code)
    }
    const codes = req.topics.map((t) => t.partitions.map((): number => ErrorCodes.NONE))
    const offsets: OffsetToCommit[] = []
    const slots: [number, number][] = []
    req.topics.forEach((t, ti) => {
      const topic = topics.get(t.name)
      t.partitions.forEach((p, pi) => {
        if (topic === undefined || p.partitionIndex < 0 || p.partitionIndex >= topic.logs.length) {
          codes[ti]![pi] = ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION
          return
        }
        offsets.push({ topic: t.name, partition: p.partitionIndex, offset: p.committedOffset, leaderEpoch: p.committedLeaderEpoch ?? -1, metadata: p.committedMetadata })
        slots.push([ti, pi])
      })
    })
    if (offsets.length > 0) {
      const results = await commitTxnOffsets(groups, logger, {
        groupId: req.groupId,
        generationId: req.generationId ?? -1,
        memberId: req.memberId ?? '',
        groupInstanceId: req.groupInstanceId ?? null,
        producerId: req.producerId,
        offsets,
      })
      results.forEach((code, i) => {
        const [ti, pi] = slots[i]!
        codes[ti]![pi] = code
      })
    }
    return respond(req, (ti, pi) => codes[ti]![pi]!)
  },
  errorResponse(req, errorCode) {
    return respond(req, () => errorCode)
  },
})
