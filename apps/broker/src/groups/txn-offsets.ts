import { ErrorCodes } from '@tidelog/protocol'
import type { Logger } from '../logger.js'
import type { GroupCoordinator, MemberRef, OffsetToCommit } from './coordinator.js'
import { GroupState } from './group.js'
import { RecordListTooLargeError } from './offsets-store.js'

export interface TxnCommitRequest extends MemberRef {
  producerId: bigint
  offsets: readonly OffsetToCommit[]
}

/**
 * TxnOffsetCommit's group side (Kafka's GroupCoordinator.handleTxnCommitOffsets,
 * KIP-447): unlike a plain commit, generation -1 and no member id are accepted
 * whatever the group's state (a producer without group metadata), but a member
 * id, instance id or generation that is given must be the group's current one,
 * so a zombie of an older generation is fenced. The offsets are stored as the
 * transaction's pending offsets, visible only after its commit marker.
 * Returns one error code per offset, in order.
 */
export async function commitTxnOffsets(groups: GroupCoordinator, logger: Logger, req: TxnCommitRequest): Promise<number[]> {
  const all = (code: number) => req.offsets.map(() => code)
  const store = groups.offsets
  if (store.isClosed) return all(ErrorCodes.COORDINATOR_NOT_AVAILABLE)
  if (req.groupId === '') return all(ErrorCodes.INVALID_GROUP_ID)
  const known = groups.group(req.groupId)
  if (known === undefined && (req.generationId >= 0 || req.memberId !== '')) {
    // A group this coordinator does not know has no members and no generation to match.
    return all(req.memberId !== '' ? ErrorCodes.UNKNOWN_MEMBER_ID : ErrorCodes.ILLEGAL_GENERATION)
  }
  const group = known ?? groups.groupForCommit(req.groupId)
  if (group.is(GroupState.Dead)) return all(ErrorCodes.COORDINATOR_NOT_AVAILABLE)
  if (req.groupInstanceId !== null) {
    const current = group.currentStaticMemberId(req.groupInstanceId)
    if (current === undefined) return all(ErrorCodes.UNKNOWN_MEMBER_ID)
    if (current !== req.memberId) return all(ErrorCodes.FENCED_INSTANCE_ID)
  } else if (req.memberId !== '' && !group.has(req.memberId)) {
    return all(ErrorCodes.UNKNOWN_MEMBER_ID)
  }
  if (req.generationId >= 0 && req.generationId !== group.generationId) return all(ErrorCodes.ILLEGAL_GENERATION)
  const now = Date.now()
  const codes: number[] = []
  const commits = []
  for (const o of req.offsets) {
    if (o.metadata !== null && o.metadata.length > groups.offsetMetadataMaxBytes) {
      codes.push(ErrorCodes.OFFSET_METADATA_TOO_LARGE)
      continue
    }
    codes.push(ErrorCodes.NONE)
    commits.push({ topic: o.topic, partition: o.partition, offset: o.offset, leaderEpoch: o.leaderEpoch, metadata: o.metadata ?? '', commitTimestamp: now, expireTimestamp: -1 })
  }
  try {
    store.commitPending(req.groupId, req.producerId, commits)
    await store.durable()
  } catch (err) {
    logger.error(`group ${req.groupId}: cannot persist transactional offsets: ${(err as Error).message}`)
    return all(err instanceof RecordListTooLargeError ? ErrorCodes.INVALID_COMMIT_OFFSET_SIZE : ErrorCodes.NOT_COORDINATOR)
  }
  return codes
}
