/**
 * The arithmetic of client quotas, with an injected clock: Kafka's windowed Rate (samples,
 * purge, the samples - 1 full-window floor), the throttle time QuotaUtils computes, the
 * KIP-55 resolution order of user / client-id entities, and ClientQuotaControlManager's
 * validation messages.
 */
import { describe, expect, it } from 'vitest'
import { ErrorCodes } from '@tidelog/protocol'
import { QuotaManager } from '../src/quotas/manager.js'
import { QuotaSensor, SampledRate } from '../src/quotas/rate.js'
import { type Alteration, QuotaStore } from '../src/quotas/store.js'

const W = { samples: 11, windowMs: 1000 }
const set = (entity: Record<string, string | null>, values: Record<string, number>): Alteration => ({
  entity: Object.entries(entity).map(([entityType, entityName]) => ({ entityType, entityName })),
  ops: Object.entries(values).map(([key, value]) => ({ key, value, remove: false })),
})

describe('SampledRate (Kafka Rate over SampledStat)', () => {
  it('measures over at least samples - 1 full windows, so a new client gets that much burst', () => {
    const r = new SampledRate(W)
    r.record(1000, 0)
    // 10 full windows assumed: 1000 bytes over 10 s.
    expect(r.windowSizeMs(0)).toBe(10_000)
    expect(r.rate(0)).toBeCloseTo(100)
    expect(r.windowSizeMs(500)).toBe(10_500)
  })

  it('advances a sample per window, wraps after `samples`, and purges samples older than samples × window', () => {
    const r = new SampledRate(W)
    for (let t = 0; t < 11; t++) r.record(10, t * 1000)
    expect(r.snapshot(10_999).map((s) => s.value)).toEqual(new Array(11).fill(10))
    expect(r.total(10_999)).toBe(110)
    // The 12th window reuses the oldest sample.
    r.record(5, 11_000)
    expect(r.total(11_000)).toBe(105)
    // After 11 windows without records every sample is reset.
    expect(r.total(30_000)).toBe(0)
    // Elapsed time past the floor counts as is: 12 s since the oldest sample started.
    const q = new SampledRate(W)
    for (let t = 0; t <= 12; t++) q.record(1, t * 1000)
    expect(q.windowSizeMs(12_500)).toBe(12_500 - 2000)
  })

  it('throttle time is (rate - bound) / bound × window, Kafka QuotaUtils.throttleTime', () => {
    const s = new QuotaSensor(W, 100)
    expect(s.record(1000, 0)).toBe(0) // 100/s exactly: within the bound
    // 2000 over 10 s = 200/s: (200 - 100) / 100 × 10 000 ms
    expect(s.record(1000, 0)).toBe(10_000)
    expect(s.violations).toBe(1)
    const capped = new QuotaSensor(W, 1, 1000)
    expect(capped.record(1_000_000, 0)).toBe(1000)
  })

  it('unrecord takes a value back', () => {
    const s = new QuotaSensor(W, 100)
    s.record(5000, 0)
    s.unrecord(5000, 0)
    expect(s.rate.total(0)).toBe(0)
    expect(s.recorded).toBe(0)
  })
})

describe('QuotaManager: which entity a (user, client-id) is counted under (KIP-55)', () => {
  it('follows /users/u/clients/c, /users/u/clients/<default>, /users/u, /users/<default>/clients/c, /users/<default>/clients/<default>, /users/<default>, /clients/c, /clients/<default>', async () => {
    const store = new QuotaStore()
    let now = 0
    const m = new QuotaManager(store, W, () => now)
    const levels: [Record<string, string | null>, { user: string; clientId: string }][] = [
      [{ 'client-id': null }, { user: '', clientId: 'c' }],
      [{ 'client-id': 'c' }, { user: '', clientId: 'c' }],
      [{ user: null }, { user: 'u', clientId: '' }],
      [{ user: null, 'client-id': null }, { user: 'u', clientId: 'c' }],
      [{ user: null, 'client-id': 'c' }, { user: 'u', clientId: 'c' }],
      [{ user: 'u' }, { user: 'u', clientId: '' }],
      [{ user: 'u', 'client-id': null }, { user: 'u', clientId: 'c' }],
      [{ user: 'u', 'client-id': 'c' }, { user: 'u', clientId: 'c' }],
    ]
    expect(m.active).toBe(false)
    expect(m.resolve('produce', 'u', 'c')).toBeUndefined()
    for (const [i, [entity, tags]] of levels.entries()) {
      // Each more specific level wins over everything set before it.
      await store.alter([set(entity, { producer_byte_rate: 1000 + i })], false)
      expect(m.resolve('produce', 'u', 'c')).toEqual({ tags, bound: 1000 + i })
    }
    expect(m.active).toBe(true)
    // Per key: a consumer quota does not make a produce quota.
    expect(m.resolve('fetch', 'u', 'c')).toBeUndefined()
    // Another user of the same client id falls to /users/<default>/clients/c.
    expect(m.resolve('produce', 'v', 'c')).toEqual({ tags: { user: 'v', clientId: 'c' }, bound: 1004 })
    now = 1
    expect(m.maxValueInWindow('produce', 'u', 'c')).toBe(1007 * 10)
  })

  it('clients sharing a user quota share one sensor; a change applies at once', async () => {
    const store = new QuotaStore()
    const m = new QuotaManager(store, W, () => 0)
    await store.alter([set({ user: 'u' }, { producer_byte_rate: 100 })], false)
    expect(m.record('produce', 'u', 'a', 1000)).toBe(0)
    // Client b is counted with a: 2000 over 10 s is twice the bound.
    expect(m.record('produce', 'u', 'b', 1000)).toBe(10_000)
    expect(m.accounts()).toMatchObject([{ type: 'produce', user: 'u', clientId: '', bound: 100, windowTotal: 2000, recorded: 2000, violations: 1 }])
    await store.alter([set({ user: 'u' }, { producer_byte_rate: 1_000_000 })], false)
    expect(m.record('produce', 'u', 'a', 1000)).toBe(0)
    await store.alter([{ entity: [{ entityType: 'user', entityName: 'u' }], ops: [{ key: 'producer_byte_rate', value: 0, remove: true }] }], false)
    expect(m.active).toBe(false)
    expect([...store.all()]).toEqual([])
  })

  it('forgets sensors idle for an hour, as Kafka expires inactive sensors', async () => {
    const store = new QuotaStore()
    let now = 0
    const m = new QuotaManager(store, W, () => now)
    await store.alter([set({ 'client-id': null }, { producer_byte_rate: 100 })], false)
    m.record('produce', 'u', 'a', 1)
    now = 3600_000 + 60_001
    m.record('produce', 'u', 'b', 1)
    expect(m.accounts().map((a) => a.clientId)).toEqual(['b'])
  })
})

describe('QuotaStore validation (ClientQuotaControlManager)', () => {
  it('answers Kafka\'s message for each bad entity or value and applies the good ones', async () => {
    const store = new QuotaStore()
    const cases: [Alteration, string | undefined][] = [
      [set({ user: 'a' }, { producer_byte_rate: 1024, request_percentage: 12.5, controller_mutation_rate: 0.5 }), undefined],
      [set({ ip: '10.0.0.1' }, { connection_creation_rate: 5 }), undefined],
      [set({ ip: null }, { connection_creation_rate: 5 }), undefined],
      [set({}, { producer_byte_rate: 1 }), 'Invalid empty client quota entity'],
      [set({ group: 'g' }, { producer_byte_rate: 1 }), 'Unhandled client quota entity type: group'],
      [set({ user: '' }, { producer_byte_rate: 1 }), 'Empty user not supported'],
      [set({ user: 'b1' }, { foo: 1 }), 'Invalid configuration key foo'],
      [set({ user: 'b2' }, { connection_creation_rate: 1 }), 'Invalid configuration key connection_creation_rate'],
      [set({ ip: '10.0.0.2' }, { producer_byte_rate: 1 }), 'Invalid configuration key producer_byte_rate'],
      [set({ 'client-id': 'b3' }, { producer_byte_rate: 0 }), 'Quota producer_byte_rate must be greater than 0'],
      [set({ user: 'b4', 'client-id': null }, { producer_byte_rate: 1.5 }), 'producer_byte_rate cannot be a fractional value.'],
      [set({ user: 'b5' }, { request_percentage: Number.POSITIVE_INFINITY }), 'Quota request_percentage must be a finite number'],
      [set({ user: 'b6' }, { request_percentage: Number.NaN }), 'Quota request_percentage must be greater than 0'],
      [set({ ip: '10.0.0.3' }, { connection_creation_rate: 2 ** 31 }), 'Proposed value for connection_creation_rate is too large for an INT.'],
      [set({ ip: '10.0.0.4', user: 'x' }, { connection_creation_rate: 1 }), 'Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId'],
      [set({ ip: 'no-such-host.invalid' }, { connection_creation_rate: 1 }), 'no-such-host.invalid is not a valid IP or resolvable host.'],
      [
        { entity: [{ entityType: 'user', entityName: 'c' }], ops: [{ key: 'producer_byte_rate', value: 1, remove: false }, { key: 'producer_byte_rate', value: 2, remove: false }] },
        // Kafka's controller records the duplicate key, then reports the entity as a duplicate.
        'Ignoring duplicate entity ClientQuotaEntity(entries={user=c})',
      ],
    ]
    const results = await store.alter(cases.map((c) => c[0]), false)
    expect(results.map((r) => r.error)).toEqual(cases.map((c) => c[1]))
    expect(store.get({ user: 'a' }, 'producer_byte_rate')).toBe(1024)
    expect(store.get({ user: 'c' }, 'producer_byte_rate')).toBeUndefined()
    // An entity named twice is answered once; the first one's change stays applied, as in Kafka.
    const twice = await store.alter([set({ user: 'a' }, { consumer_byte_rate: 7 }), set({ user: 'a' }, { consumer_byte_rate: 8 })], false)
    expect(twice).toEqual([{ entity: [{ entityType: 'user', entityName: 'a' }], error: 'Ignoring duplicate entity ClientQuotaEntity(entries={user=a})' }])
    expect(store.get({ user: 'a' }, 'consumer_byte_rate')).toBe(7)
    expect(store.get({ ip: null }, 'connection_creation_rate')).toBe(5)
    expect([...store.all()]).toHaveLength(3)
  })

  it('validate_only checks and changes nothing', async () => {
    const store = new QuotaStore()
    const results = await store.alter([set({ user: 'a' }, { producer_byte_rate: 1 }), set({ user: 'b' }, { nope: 1 })], true)
    expect(results.map((r) => r.error)).toEqual([undefined, 'Invalid configuration key nope'])
    expect([...store.all()]).toEqual([])
  })
})

describe('controller mutation quota (KIP-599 TokenBucket, simulated clock)', () => {
  it('strict: the burst is served, a charge while below zero is refused with the time to zero, which decays', async () => {
    const store = new QuotaStore()
    let now = 0
    const m = new QuotaManager(store, W, () => now)
    await store.alter([set({ user: 'u' }, { controller_mutation_rate: 2 })], false)
    // Only a mutation quota: requests get a ticket, but nothing else is resolved.
    expect(m.active).toBe(true)
    expect(m.resolve('produce', 'u', 'c')).toBeUndefined()
    expect(m.mutationQuota('v', 'c', true)).toBeUndefined()
    const q = m.mutationQuota('u', 'c', true)!
    // 11 windows of 1 s at 2/s: 22 tokens to start with.
    expect(q.charge(20)).toBeUndefined()
    expect(q.charge(5)).toBeUndefined()
    expect(q.throttleMs()).toBe(0)
    expect(q.charge(1)).toEqual({ errorCode: ErrorCodes.THROTTLING_QUOTA_EXCEEDED, errorMessage: 'The throttling quota has been exceeded.' })
    // -3 tokens at 2 a second.
    expect(q.throttleMs()).toBe(1500)
    now = 1000
    expect(q.throttleMs()).toBe(500)
    now = 1500
    // Back at zero, which is not below it: served, and the bucket goes negative again.
    const next = m.mutationQuota('u', 'c', true)!
    expect(next.charge(1)).toBeUndefined()
    expect(m.accounts().find((a) => a.type === 'mutation')).toMatchObject({ user: 'u', clientId: '', bound: 2, recorded: 26, violations: 1, throttledMs: 1500, tokens: -1 })
    // A long idle refills to the burst and no further.
    now = 1_000_000
    expect(m.accounts().find((a) => a.type === 'mutation')!.tokens).toBe(22)
  })

  it('permissive (older versions): every charge is served; going below zero throttles', async () => {
    const store = new QuotaStore()
    const m = new QuotaManager(store, W, () => 0)
    await store.alter([set({ 'client-id': 'c' }, { controller_mutation_rate: 2 })], false)
    const q = m.mutationQuota('u', 'c', false)!
    expect(q.charge(25)).toBeUndefined()
    expect(q.throttleMs()).toBe(1500)
    expect(q.charge(1)).toBeUndefined()
    expect(q.throttleMs()).toBe(2000)
    expect(m.mutationQuota('u', 'other', false)).toBeUndefined()
  })
})
