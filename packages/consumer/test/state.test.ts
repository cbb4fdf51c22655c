import { describe, expect, it } from 'vitest'
import { IllegalStateError } from '../src/errors.js'
import { Membership } from '../src/group/state.js'

describe('Membership', () => {
  it('follows the classic protocol: unjoined -> joining -> syncing -> stable -> joining ...', () => {
    const m = new Membership()
    const seen: string[] = []
    m.onTransition = (from, to) => seen.push(`${from}>${to}`)
    m.transition('joining')
    m.transition('joining') // MEMBER_ID_REQUIRED: JoinGroup again
    m.transition('syncing')
    expect(m.heartbeats).toBe(true)
    m.transition('stable')
    m.transition('joining')
    expect(m.heartbeats).toBe(false)
    m.transition('syncing')
    m.transition('stable')
    m.transition('leaving')
    m.transition('unjoined')
    m.transition('closed')
    expect(seen[0]).toBe('unjoined>joining')
    expect(m.isTerminal).toBe(true)
  })

  it('refuses transitions the protocol does not have', () => {
    const m = new Membership()
    expect(() => m.transition('stable')).toThrow(IllegalStateError)
    expect(() => m.transition('syncing')).toThrow(IllegalStateError)
    m.transition('failed')
    expect(() => m.transition('joining')).toThrow(IllegalStateError)
  })

  it('keeps the member id after ILLEGAL_GENERATION but not after UNKNOWN_MEMBER_ID', () => {
    const m = new Membership()
    m.memberId = 'member-1'
    m.generationId = 4
    expect(m.hasGeneration).toBe(true)
    m.resetGeneration(true)
    expect(m.memberId).toBe('member-1')
    expect(m.hasGeneration).toBe(false)
    m.resetGeneration(false)
    expect(m.memberId).toBe('')
  })

  it('keeps the first reason of a pending rejoin', () => {
    const m = new Membership()
    m.rejoinReason = undefined
    m.requestRejoin('a')
    m.requestRejoin('b')
    expect(m.rejoinReason).toBe('a')
  })
})
