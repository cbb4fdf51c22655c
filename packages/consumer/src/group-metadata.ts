import { ErrorCodes, ProtocolError } from '@tidelog/protocol'

/**
 * Java's ConsumerGroupMetadata: who this member is in its group, for a transactional
 * producer's sendOffsetsToTransaction() (KIP-447). The group coordinator refuses the offsets of
 * a member whose generation is no longer current, so a zombie copier cannot commit.
 */
export interface ConsumerGroupMetadata {
  readonly groupId: string
  /** -1 while the member is in no generation (Java's JoinGroupRequest.UNKNOWN_GENERATION_ID). */
  readonly generationId: number
  /** '' while the member has none. */
  readonly memberId: string
  readonly groupInstanceId: string | null
}

/** The metadata for a consumer with a group id, or INVALID_GROUP_ID without one (Java's InvalidGroupIdException). */
export function groupMetadataOf(
  groupId: string | undefined,
  groupInstanceId: string | null | undefined,
  membership: { hasGeneration: boolean; generationId: number; memberId: string } | undefined,
): ConsumerGroupMetadata {
  if (groupId === undefined) {
    throw new ProtocolError(ErrorCodes.INVALID_GROUP_ID, { api: 'groupMetadata', message: 'groupMetadata() needs a consumer with a groupId' })
  }
  const known = membership !== undefined && membership.hasGeneration
  return Object.freeze({
    groupId,
    generationId: known ? membership.generationId : -1,
    memberId: known ? membership.memberId : (membership?.memberId ?? ''),
    groupInstanceId: groupInstanceId ?? null,
  })
}
