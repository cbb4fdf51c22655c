/**
 * Revocation in Java's order (ConsumerCoordinator.onJoinPrepare: auto-commit, then
 * onPartitionsRevoked; close(): auto-commit, then onLeavePrepare's listener, then LeaveGroup),
 * against the tidelog broker: the listener finds the processed offsets already committed, and on
 * close the member is still in the group while the listener runs.
 */
import { Admin } from '@tidelog/client'
import { Consumer, type ConsumerOptions, type TopicPartition } from '@tidelog/consumer'
import { describe, expect, it } from 'vitest'
import { cleanup, sleep, startTestBroker } from './helpers/broker.js'
import { waitFor } from './helpers/produce.js'

const options = (brokers: string[], groupId: string): ConsumerOptions => ({
  brokers,
  groupId,
  autoOffsetReset: 'earliest',
  // Only the revocation commits: no timer commit can have done it first.
  autoCommitIntervalMs: 600_000,
  sessionTimeoutMs: 6000,
  heartbeatIntervalMs: 100,
  fetchMaxWaitMs: 50,
})

interface Watched {
  consumer: Consumer
  read: number
  /** What happened, in order: commits (with their offsets) and listener calls. */
  order: string[]
  /** The group's committed offsets as the revocation listener saw them. */
  committedInListener: bigint[][]
  membersInListener: number[]
}

async function member(brokers: string[], groupId: string, topic: string, admin?: Admin, extra: Partial<ConsumerOptions> & { commitInListener?: boolean } = {}): Promise<Watched> {
  const { commitInListener, ...more } = extra
  const consumer = new Consumer({ ...options(brokers, groupId), ...more })
  const w: Watched = { consumer, read: 0, order: [], committedInListener: [], membersInListener: [] }
  consumer.on('offsets.committed', ({ offsets }: { offsets: { offset: bigint }[] }) => w.order.push(`committed ${offsets.map((o) => o.offset).join(',')}`))
  await consumer.subscribe([topic], {
    listener: {
      onPartitionsRevoked: async (partitions: TopicPartition[]) => {
        w.order.push(`revoked ${partitions.map((p) => p.partition).join(',')}`)
        // The Java pattern without auto-commit: commitSync() in onPartitionsRevoked.
        if (commitInListener === true) await consumer.commit()
        // Still assigned while the listener runs: committed() and position() work for them.
        w.committedInListener.push((await consumer.committed(partitions)).map((o) => o.offset))
        if (admin !== undefined) w.membersInListener.push((await admin.describeGroups([groupId]))[0]!.members.length)
      },
    },
  })
  const run = (async () => {
    for await (const _ of consumer) w.read++
  })()
  cleanup(async () => {
    await consumer.close()
    await run.catch(() => {})
  })
  return w
}

describe('revocation order', () => {
  it('a rebalance commits the processed offsets first, then calls onPartitionsRevoked', async () => {
    const { brokers, producer } = await startTestBroker(2)
    await producer.fill('rev', 2, 10)
    const a = await member(brokers, 'rev-group', 'rev')
    await waitFor(() => a.read === 10, 10_000, 'the first member reads everything')
    await sleep(100) // its loop asks for the next message: all 10 count as processed
    // A second member joins: the group rebalances, eagerly (Java's default assignors).
    await member(brokers, 'rev-group', 'rev')
    await waitFor(() => a.committedInListener.length > 0, 10_000, 'the revocation')
    expect(a.order.slice(0, 2)).toEqual(['committed 5,5', 'revoked 0,1'])
    expect(a.committedInListener[0]).toEqual([5n, 5n])
  }, 20_000)

  it('close() commits, then calls onPartitionsRevoked while still a member, then leaves the group', async () => {
    const { brokers, producer } = await startTestBroker(2)
    const admin = new Admin({ brokers })
    cleanup(() => admin.close())
    await producer.fill('closing', 2, 8)
    const a = await member(brokers, 'close-group', 'closing', admin)
    await waitFor(() => a.read === 8, 10_000, 'everything read')
    await sleep(100)
    await a.consumer.close()
    expect(a.order).toEqual(['committed 4,4', 'revoked 0,1'])
    expect(a.committedInListener).toEqual([[4n, 4n]])
    expect(a.membersInListener).toEqual([1])
    const [group] = await admin.describeGroups(['close-group'])
    expect(group!.members).toHaveLength(0)
    expect(group!.state).toBe('Empty')
  }, 20_000)

  it('without auto-commit, commit() in onPartitionsRevoked commits the revoked partitions (rebalance and close)', async () => {
    const { brokers, producer } = await startTestBroker(2)
    await producer.fill('manual', 2, 6)
    const a = await member(brokers, 'manual-group', 'manual', undefined, { autoCommit: false, commitInListener: true })
    await waitFor(() => a.read === 6, 10_000, 'everything read')
    await sleep(100)
    const b = await member(brokers, 'manual-group', 'manual', undefined, { autoCommit: false, commitInListener: true })
    await waitFor(() => a.order.length >= 2, 10_000, 'the revocation and its commit')
    // The listener's commit comes after the listener started: no auto-commit ran before it.
    expect(a.order.slice(0, 2)).toEqual(['revoked 0,1', 'committed 3,3'])
    await producer.fill('manual', 2, 4, { from: 6 })
    await waitFor(() => a.read + b.read === 10, 10_000, 'the rest read by the two members')
    await sleep(100)
    const bOrder = b.order.length
    await b.consumer.close()
    // b closes: its listener commits what it holds of the 4 new records.
    expect(b.order.slice(bOrder).filter((x) => x.startsWith('committed')).length).toBe(1)
    const check = new Consumer({ brokers, groupId: 'manual-group' })
    cleanup(() => check.close())
    await a.consumer.close()
    const committed = await check.committed([0, 1].map((partition) => ({ topic: 'manual', partition })))
    expect(committed.map((c) => c.offset)).toEqual([5n, 5n])
  }, 20_000)
})
