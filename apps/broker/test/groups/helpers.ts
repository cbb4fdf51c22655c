import { encodeConsumerProtocolSubscription } from '@tidelog/protocol'
import { GroupCoordinator, type CoordinatorOptions, type JoinRequest } from '../../src/groups/coordinator.js'
import type { GroupProtocol, JoinResult } from '../../src/groups/group.js'
import { OffsetsStore, type OffsetsStoreOptions } from '../../src/groups/offsets-store.js'
import { silentLogger } from '../../src/logger.js'
import { tempDir } from '../helpers/tmp.js'

/** A protocol entry as Java's consumer sends it: the assignor's name and a ConsumerProtocolSubscription. */
export function consumerProtocol(name: string, topics: string[] = ['t']): GroupProtocol {
  return { name, metadata: encodeConsumerProtocolSubscription({ topics, userData: null }, 0) }
}

export function joinRequest(over: Partial<JoinRequest> = {}): JoinRequest {
  return {
    groupId: 'g',
    memberId: '',
    groupInstanceId: null,
    clientId: 'client',
    clientHost: '/127.0.0.1',
    sessionTimeoutMs: 10_000,
    rebalanceTimeoutMs: 30_000,
    protocolType: 'consumer',
    protocols: [consumerProtocol('range')],
    requireKnownMemberId: true,
    supportSkippingAssignment: false,
    ...over,
  }
}

export interface Harness {
  dir: string
  store: OffsetsStore
  coord: GroupCoordinator
  reopen(opts?: CoordinatorOptions): Promise<Harness>
  close(): Promise<void>
}

/** A coordinator over a real store in a temp directory. */
export function harness(opts: CoordinatorOptions = {}, storeOpts: OffsetsStoreOptions = {}, dir = tempDir('tidelog-groups-')): Harness {
  const store = OffsetsStore.open(dir, silentLogger, storeOpts)
  const coord = new GroupCoordinator(store, silentLogger, { initialRebalanceDelayMs: 0, ...opts })
  const h: Harness = {
    dir,
    store,
    coord,
    async close() {
      coord.close()
      await store.close()
    },
    async reopen(next = opts) {
      await h.close()
      return harness(next, storeOpts, dir)
    },
  }
  return h
}

/** The KIP-394 handshake: the first JoinGroup hands out the id, the second one (returned, still pending) joins with it. */
export async function joinWithId(coord: GroupCoordinator, over: Partial<JoinRequest> = {}): Promise<{ memberId: string; joined: Promise<JoinResult> }> {
  const first = await coord.join(joinRequest(over))
  if (first.errorCode !== 79) throw new Error(`expected MEMBER_ID_REQUIRED, got ${first.errorCode}`)
  return { memberId: first.memberId, joined: coord.join(joinRequest({ ...over, memberId: first.memberId })) }
}
