import { ShareFetch } from '@tidelog/protocol'
import { shareFetch } from '../groups/share/share-fetch.js'
import { shareGroupsOf } from '../groups/share/share-groups.js'
import { defineHandler } from './types.js'

/**
 * ShareFetch v1-v2 (KIP-932): records acquired for the member under acquisition locks, with
 * acknowledgements of earlier ones piggy-backed. v2's renew acknowledgements and record
 * limit acquire mode are not served: such requests are answered as v1 ones would be.
 */
export const shareFetchHandler = defineHandler({
  api: ShareFetch,
  minVersion: 1,
  maxVersion: 1,
  handle(ctx, req) {
    return shareFetch(ctx.broker, shareGroupsOf(ctx.broker), req)
  },
  errorResponse(req, errorCode) {
    const responses = req.topics.map((t) => ({
      topicId: t.topicId,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        errorCode,
        errorMessage: null,
        acknowledgeErrorCode: p.acknowledgementBatches.length > 0 ? errorCode : 0,
        acknowledgeErrorMessage: null,
        currentLeader: { leaderId: -1, leaderEpoch: -1 },
        records: Buffer.alloc(0),
        acquiredRecords: [],
      })),
    }))
    return { throttleTimeMs: 0, errorCode, errorMessage: null, acquisitionLockTimeoutMs: 0, responses, nodeEndpoints: [] }
  },
})
