import type { ApiVersionsResponseApiVersion } from '@tidelog/protocol'
import { produceHandler } from './00-produce.js'
import { fetchHandler } from './01-fetch.js'
import { listOffsetsHandler } from './02-list-offsets.js'
import { metadataHandler } from './03-metadata.js'
import { offsetCommitHandler } from './08-offset-commit.js'
import { offsetFetchHandler } from './09-offset-fetch.js'
import { findCoordinatorHandler } from './10-find-coordinator.js'
import { joinGroupHandler } from './11-join-group.js'
import { heartbeatHandler } from './12-heartbeat.js'
import { leaveGroupHandler } from './13-leave-group.js'
import { syncGroupHandler } from './14-sync-group.js'
import { describeGroupsHandler } from './15-describe-groups.js'
import { listGroupsHandler } from './16-list-groups.js'
import { createTopicsHandler } from './19-create-topics.js'
import { deleteTopicsHandler } from './20-delete-topics.js'
import { deleteRecordsHandler } from './21-delete-records.js'
import { initProducerIdHandler } from './22-init-producer-id.js'
import { offsetForLeaderEpochHandler } from './23-offset-for-leader-epoch.js'
import { describeConfigsHandler } from './32-describe-configs.js'
import { createPartitionsHandler } from './37-create-partitions.js'
import { deleteGroupsHandler } from './42-delete-groups.js'
import { offsetDeleteHandler } from './47-offset-delete.js'
import { describeClusterHandler } from './60-describe-cluster.js'
import { addPartitionsToTxnHandler } from './24-add-partitions-to-txn.js'
import { addOffsetsToTxnHandler } from './25-add-offsets-to-txn.js'
import { endTxnHandler } from './26-end-txn.js'
import { writeTxnMarkersHandler } from './27-write-txn-markers.js'
import { txnOffsetCommitHandler } from './28-txn-offset-commit.js'
import { describeProducersHandler } from './61-describe-producers.js'
import { describeTransactionsHandler } from './65-describe-transactions.js'
import { listTransactionsHandler } from './66-list-transactions.js'
import { apiVersionsHandler } from './18-api-versions.js'
import { alterConfigsHandler } from './33-alter-configs.js'
import { describeLogDirsHandler } from './35-describe-log-dirs.js'
import { incrementalAlterConfigsHandler } from './44-incremental-alter-configs.js'
import { alterPartitionReassignmentsHandler } from './45-alter-partition-reassignments.js'
import { listPartitionReassignmentsHandler } from './46-list-partition-reassignments.js'
import { saslHandshakeHandler } from './17-sasl-handshake.js'
import { saslAuthenticateHandler } from './36-sasl-authenticate.js'
import { describeUserScramCredentialsHandler } from './50-describe-user-scram-credentials.js'
import { alterUserScramCredentialsHandler } from './51-alter-user-scram-credentials.js'
import { describeAclsHandler } from './29-describe-acls.js'
import { createAclsHandler } from './30-create-acls.js'
import { deleteAclsHandler } from './31-delete-acls.js'
import { describeClientQuotasHandler } from './48-describe-client-quotas.js'
import { alterClientQuotasHandler } from './49-alter-client-quotas.js'
import { listConfigResourcesHandler } from './74-list-config-resources.js'
import { shareGroupHeartbeatHandler } from './76-share-group-heartbeat.js'
import { shareGroupDescribeHandler } from './77-share-group-describe.js'
import { shareFetchHandler } from './78-share-fetch.js'
import { shareAcknowledgeHandler } from './79-share-acknowledge.js'
import { QuotaStore } from '../quotas/store.js'
import type { StandardAuthorizer } from '../security/authorizer.js'
import { withAuthorization } from '../security/authorizer-rules.js'
import type { ApiHandler } from './types.js'

export type { ApiHandler, RequestContext } from './types.js'

/**
 * The broker presents itself as Apache Kafka 4.0: each API tops out at 4.0's maximum version
 * (or below it where a test lists why), so clients that infer the broker's release from these
 * ranges (kafka-python, librdkafka) switch features on as for 4.0. Minimums follow KIP-896.
 * test/broker-release-coherence.test.ts checks this against 4.0.2's captured answer.
 */
export function createRegistry(options: { authorizer?: StandardAuthorizer; quotas?: QuotaStore } = {}): ReadonlyMap<number, ApiHandler> {
  const registry = new Map<number, ApiHandler>()
  const { authorizer } = options
  const quotas = options.quotas ?? new QuotaStore()
  const add = (h: ApiHandler): void => {
    if (h.minVersion < h.api.minVersion || h.maxVersion > h.api.maxVersion) {
      throw new Error(`${h.api.name} handler serves ${h.minVersion}-${h.maxVersion}, beyond the codec's ${h.api.minVersion}-${h.api.maxVersion}`)
    }
    // With an authorizer every API passes its rule (security/authorizer-rules.ts) first.
    registry.set(h.api.apiKey, authorizer === undefined ? h : withAuthorization(h, authorizer))
  }
  for (const h of [
    produceHandler,
    fetchHandler,
    listOffsetsHandler,
    metadataHandler,
    offsetCommitHandler,
    offsetFetchHandler,
    findCoordinatorHandler,
    joinGroupHandler,
    heartbeatHandler,
    leaveGroupHandler,
    syncGroupHandler,
    describeGroupsHandler,
    listGroupsHandler,
    createTopicsHandler,
    deleteTopicsHandler,
    deleteRecordsHandler,
    initProducerIdHandler,
    offsetForLeaderEpochHandler,
    describeConfigsHandler,
    createPartitionsHandler,
    deleteGroupsHandler,
    offsetDeleteHandler,
    describeClusterHandler,
    addPartitionsToTxnHandler,
    addOffsetsToTxnHandler,
    endTxnHandler,
    writeTxnMarkersHandler,
    txnOffsetCommitHandler,
    describeProducersHandler,
    describeTransactionsHandler,
    listTransactionsHandler,
    alterConfigsHandler,
    describeLogDirsHandler,
    incrementalAlterConfigsHandler,
    alterPartitionReassignmentsHandler,
    listPartitionReassignmentsHandler,
    saslHandshakeHandler,
    saslAuthenticateHandler,
    describeUserScramCredentialsHandler,
    alterUserScramCredentialsHandler,
    describeAclsHandler(authorizer),
    createAclsHandler(authorizer),
    deleteAclsHandler(authorizer),
    describeClientQuotasHandler(quotas),
    alterClientQuotasHandler(quotas),
    listConfigResourcesHandler,
    shareGroupHeartbeatHandler,
    shareGroupDescribeHandler,
    shareFetchHandler,
    shareAcknowledgeHandler,
  ] as ApiHandler[]) {
    add(h)
  }
  add(apiVersionsHandler(() => advertisedVersions(registry)))
  return registry
}

/** The ApiVersions list: every registered handler's advertised range, by api key. */
export function advertisedVersions(registry: ReadonlyMap<number, ApiHandler>): ApiVersionsResponseApiVersion[] {
  return [...registry.values()]
    .map((h) => ({ apiKey: h.api.apiKey, minVersion: h.advertisedMinVersion ?? h.minVersion, maxVersion: h.maxVersion }))
    .sort((a, b) => a.apiKey - b.apiKey)
}
