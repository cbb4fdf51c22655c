/**
 * KIP-219 over a real socket: a response carrying throttle_time_ms (in a version where the
 * broker throttles after responding) holds every further request on that connection until the
 * time has passed; older versions, where the broker already delayed its answer, are not held.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { Fetch, Heartbeat, Metadata, Produce, type FetchRequest } from '@tidelog/protocol'
import { Admin, Connection, KafkaConnectionError, type Logger } from '@tidelog/client'
import { FakeBroker, fakeCluster, type FakeRequest } from './fake-broker.js'

const cleanup: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()!()
})

async function broker(): Promise<FakeBroker> {
  const b = await FakeBroker.start()
  cleanup.push(() => b.close())
  return b
}

interface Logged {
  level: string
  obj: Record<string, unknown>
  msg: string | undefined
}

function recordingLogger(): { logger: Logger; lines: Logged[] } {
  const lines: Logged[] = []
  const at = (level: string) => (obj: object, msg?: string) => void lines.push({ level, obj: obj as Record<string, unknown>, msg })
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, lines }
}

async function connection(b: FakeBroker, logger?: Logger): Promise<Connection> {
  const c = new Connection({ host: '127.0.0.1', port: b.port, nodeId: 0, ...(logger ? { logger } : {}) })
  cleanup.push(() => c.destroy())
  await c.connect()
  return c
}

const fetchBody: FetchRequest = { replicaId: -1, maxWaitMs: 0, minBytes: 1, maxBytes: 1024, isolationLevel: 0, sessionId: 0, sessionEpoch: -1, topics: [] }
const fetchAnswer = (throttleTimeMs: number) => ({ throttleTimeMs, errorCode: 0, sessionId: 0, responses: [] })
const metadataAnswer = (throttleTimeMs: number) => ({ throttleTimeMs, brokers: [], clusterId: 'c', controllerId: -1, topics: [] })

/** Throttles the first answer of an api key by `ms`, then answers unthrottled. */
function throttleFirst(answer: (ms: number) => unknown, ms: number) {
  let first = true
  return (_req: FakeRequest) => {
    const t = first ? ms : 0
    first = false
    return answer(t)
  }
}

describe('KIP-219 throttling in the connection', () => {
  const cases = [
    { name: 'Fetch v8+', api: Fetch, body: fetchBody, answer: fetchAnswer },
    { name: 'Metadata v6+ (admin)', api: Metadata, body: { topics: null }, answer: metadataAnswer },
    { name: 'Produce v6+', api: Produce, body: { acks: -1, timeoutMs: 1000, topicData: [] }, answer: (t: number) => ({ throttleTimeMs: t, responses: [] }) },
    { name: 'Heartbeat v2+ (group)', api: Heartbeat, body: { groupId: 'g', generationId: 1, memberId: 'm' }, answer: (t: number) => ({ throttleTimeMs: t, errorCode: 0 }) },
  ] as const
  for (const c of cases) {
    it(`holds the next request until throttle_time_ms has passed: ${c.name}`, async () => {
      const b = await broker()
      b.on(c.api.apiKey, throttleFirst(c.answer, 300))
      const { logger, lines } = recordingLogger()
      const conn = await connection(b, logger)
      const first = await conn.request(c.api as never, c.body as never)
      expect((first as { throttleTimeMs: number }).throttleTimeMs).toBe(300)
      expect(conn.throttledMs).toBeGreaterThan(200)
      const answeredAt = performance.now()
      await conn.request(c.api as never, c.body as never)
      const [r1, r2] = b.received(c.api.apiKey)
      expect(r2!.receivedAt - r1!.receivedAt).toBeGreaterThanOrEqual(290)
      expect(performance.now() - answeredAt).toBeGreaterThanOrEqual(280)
      expect(conn.throttledMs).toBe(0)
      const line = lines.find((l) => l.obj.throttleTimeMs === 300)
      expect(line?.level).toBe('info')
      expect(line?.obj.api).toBe(c.api.name)
    })
  }

  it('does not hold requests after versions the broker throttled itself (Fetch v7)', async () => {
    const b = await broker()
    b.on(Fetch.apiKey, throttleFirst(fetchAnswer, 300))
    const conn = await connection(b)
    await conn.request(Fetch, fetchBody, { version: 7 })
    const t0 = performance.now()
    await conn.request(Fetch, fetchBody, { version: 7 })
    expect(performance.now() - t0).toBeLessThan(150)
    expect(conn.throttledMs).toBe(0)
  })

  it('sends requests made during the throttle in order once it ends, each answered correctly', async () => {
    const b = await broker()
    let n = 0
    b.on(Metadata.apiKey, (req) => ({ ...metadataAnswer(n++ === 0 ? 200 : 0), clusterId: req.body.topics?.[0]?.name ?? 'all' }))
    const conn = await connection(b)
    await conn.request(Metadata, { topics: null })
    const answers = await Promise.all(['a', 'b', 'c'].map((name) => conn.request(Metadata, { topics: [{ name }] })))
    expect(answers.map((a) => a.clusterId)).toEqual(['a', 'b', 'c'])
    const received = b.received(Metadata.apiKey)
    expect(received.slice(1).map((r) => r.body.topics[0].name)).toEqual(['a', 'b', 'c'])
    expect(received[1]!.receivedAt - received[0]!.receivedAt).toBeGreaterThanOrEqual(190)
  })

  it('fails held requests with a retriable KafkaConnectionError when the connection closes', async () => {
    const b = await broker()
    b.on(Metadata.apiKey, throttleFirst(metadataAnswer, 10_000))
    const conn = await connection(b)
    await conn.request(Metadata, { topics: null })
    const held = conn.request(Metadata, { topics: null }).catch((e: unknown) => e)
    expect(conn.inFlightCount).toBe(1)
    const t0 = performance.now()
    await conn.close()
    const err = await held
    expect(err).toBeInstanceOf(KafkaConnectionError)
    expect((err as KafkaConnectionError).retriable).toBe(true)
    expect(performance.now() - t0).toBeLessThan(1_000)
    expect(b.received(Metadata.apiKey)).toHaveLength(1)
  })

  it('applies to the Admin client end to end: a throttled Metadata delays its next call', async () => {
    const cluster = await fakeCluster(1)
    cleanup.push(() => cluster.close())
    const b = cluster.brokers[0]!
    cluster.state.topics.push({ name: 'events', leaders: [0] })
    let first = true
    b.on(Metadata.apiKey, (req) => {
      const out = b.metadataResponse(req) as { throttleTimeMs: number }
      if (first) out.throttleTimeMs = 400
      first = false
      return out
    })
    const admin = new Admin({ brokers: [b.address] })
    cleanup.push(() => admin.close())
    expect(await admin.listTopics()).toEqual(['events'])
    const t0 = performance.now()
    expect(await admin.listTopics()).toEqual(['events'])
    expect(performance.now() - t0).toBeGreaterThanOrEqual(350)
    const [m1, m2] = b.received(Metadata.apiKey)
    expect(m2!.receivedAt - m1!.receivedAt).toBeGreaterThanOrEqual(390)
  })
})
