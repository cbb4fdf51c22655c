import { ErrorCodes } from '@tidelog/protocol'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { TXN_STATES, TxnState, VALID_PREVIOUS_STATES, canTransition } from '../../src/txn/state.js'
import type { RawClient } from '../helpers/raw-client.js'
import { addPartitions, describeTxn, endTxn, init, produce, start } from './helpers.js'

/** Whether the table allows going from `from` to `to` in at most `steps` transitions (one request may pass through Prepare*). */
function reachable(from: TxnState, to: TxnState, steps = 3): boolean {
  if (from === to) return true
  let frontier = new Set([from])
  for (let i = 0; i < steps; i++) {
    const next = new Set<TxnState>()
    for (const s of frontier) for (const t of TXN_STATES) if (canTransition(s, t)) next.add(t)
    if (next.has(to)) return true
    frontier = next
  }
  return false
}

type Op =
  | { kind: 'init' }
  | { kind: 'add'; partition: number; stale: boolean }
  | { kind: 'produce'; partition: number; stale: boolean; v12: boolean }
  | { kind: 'end'; commit: boolean; stale: boolean; tv2: boolean }

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.constant<Op>({ kind: 'init' }),
  fc.record({ kind: fc.constant('add' as const), partition: fc.integer({ min: 0, max: 1 }), stale: fc.boolean() }),
  fc.record({ kind: fc.constant('produce' as const), partition: fc.integer({ min: 0, max: 1 }), stale: fc.boolean(), v12: fc.boolean() }),
  fc.record({ kind: fc.constant('end' as const), commit: fc.boolean(), stale: fc.boolean(), tv2: fc.boolean() }),
)

/** What the coordinator must answer, per Kafka's rules, from a model of one transactional id. */
class Model {
  state: TxnState | undefined
  epoch = -1
  lastEpoch = -1
  parts = new Set<number>()
  seq = [0, 0]

  apply(o: Op): number {
    if (o.kind === 'init') {
      if (this.state === TxnState.Ongoing) {
        this.fenceAbort()
        return ErrorCodes.CONCURRENT_TRANSACTIONS
      }
      this.lastEpoch = this.epoch
      this.epoch = this.state === undefined ? 0 : this.epoch + 1
      this.state = TxnState.Empty
      this.seq = [0, 0]
      return ErrorCodes.NONE
    }
    if (this.state === undefined) return o.kind === 'produce' ? ErrorCodes.INVALID_PRODUCER_ID_MAPPING : ErrorCodes.INVALID_PRODUCER_ID_MAPPING
    if (o.kind === 'add') {
      if (o.stale) return ErrorCodes.PRODUCER_FENCED
      this.begin(o.partition)
      return ErrorCodes.NONE
    }
    if (o.kind === 'produce') {
      if (o.stale) return ErrorCodes.INVALID_PRODUCER_EPOCH
      if (o.v12) this.begin(o.partition)
      // Produce v11: KIP-890's TRANSACTION_ABORTABLE for a partition not in the open transaction.
      else if (this.state !== TxnState.Ongoing || !this.parts.has(o.partition)) return ErrorCodes.TRANSACTION_ABORTABLE
      this.seq[o.partition]! += 2
      return ErrorCodes.NONE
    }
    const wanted = o.commit ? TxnState.CompleteCommit : TxnState.CompleteAbort
    if (!o.tv2) {
      if (o.stale) return ErrorCodes.PRODUCER_FENCED
      if (this.state === TxnState.Ongoing) return this.complete(wanted, false)
      return this.state === wanted ? ErrorCodes.NONE : ErrorCodes.INVALID_TXN_STATE
    }
    const isRetry = o.stale && this.epoch - 1 === this.lastEpoch && this.state !== TxnState.Ongoing
    if (o.stale && !isRetry) return ErrorCodes.PRODUCER_FENCED
    if (this.state === TxnState.Ongoing) return this.complete(wanted, true)
    if (isRetry && this.state === wanted) return ErrorCodes.NONE
    if (!o.commit && !isRetry) return this.complete(wanted, true)
    return ErrorCodes.INVALID_TXN_STATE
  }

  private begin(p: number): void {
    this.state = TxnState.Ongoing
    this.parts.add(p)
  }

  private complete(to: TxnState, bump: boolean): number {
    if (bump) {
      this.lastEpoch = this.epoch
      this.epoch++
      this.seq = [0, 0]
    }
    this.state = to
    this.parts.clear()
    return ErrorCodes.NONE
  }

  private fenceAbort(): void {
    this.lastEpoch = this.epoch
    this.epoch++
    this.seq = [0, 0]
    this.state = TxnState.CompleteAbort
    this.parts.clear()
  }
}

async function run(c: RawClient, id: string, ops: Op[]): Promise<void> {
  const m = new Model()
  let pid = 1_000_000n
  for (const o of ops) {
    const before = m.state
    const epoch = o.kind !== 'init' && o.stale ? m.epoch - 1 : m.epoch
    const seqBefore = o.kind === 'produce' ? m.seq[o.partition]! : 0
    const expected = m.apply(o)
    let got: number
    switch (o.kind) {
      case 'init': {
        const r = await init(c, id)
        got = r.errorCode
        if (got === 0) {
          pid = r.producerId
          expect(r.producerEpoch).toBe(m.epoch)
        }
        break
      }
      case 'add':
        got = (await addPartitions(c, id, pid, epoch, [o.partition]))[0]!
        break
      case 'produce': {
        got = (await produce(c, id, pid, epoch, o.partition, o.stale ? 0 : seqBefore, { version: o.v12 ? 12 : 11 })).errorCode
        break
      }
      case 'end': {
        const r = await endTxn(c, id, pid, epoch, o.commit, o.tv2 ? 5 : 4)
        got = r.errorCode
        if (o.tv2 && got === 0) expect(r.producerEpoch).toBe(m.epoch)
        break
      }
    }
    expect({ op: o, errorCode: got }).toEqual({ op: o, errorCode: expected })
    const d = await describeTxn(c, id)
    if (m.state === undefined) {
      expect(d.errorCode).toBe(ErrorCodes.TRANSACTIONAL_ID_NOT_FOUND)
      continue
    }
    expect(d.transactionState).toBe(m.state)
    expect(d.producerEpoch).toBe(m.epoch)
    if (before !== undefined) expect(reachable(before, m.state), `${before} -> ${m.state}`).toBe(true)
  }
}

describe('transaction state machine', () => {
  it('the table is closed: every state it names is a state, and Dead and Complete* are only entered from where Kafka allows', () => {
    for (const [to, from] of Object.entries(VALID_PREVIOUS_STATES)) {
      expect(TXN_STATES).toContain(to)
      for (const f of from) expect(TXN_STATES).toContain(f)
    }
    expect(VALID_PREVIOUS_STATES[TxnState.CompleteCommit]).toEqual([TxnState.PrepareCommit])
    expect(canTransition(TxnState.Ongoing, TxnState.CompleteCommit)).toBe(false)
    expect(canTransition(TxnState.PrepareCommit, TxnState.PrepareAbort)).toBe(false)
  })

  it('random legal and illegal request sequences get the errors and states the model predicts, moving only along the table', async () => {
    const { c } = await start()
    let n = 0
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 14 }), async (ops) => {
        // The first request is usually InitProducerId; without it every request is INVALID_PRODUCER_ID_MAPPING.
        await run(c, `sm-${n++}`, ops)
      }),
      { numRuns: 100, seed: 20261201 },
    )
  })
})
