import diagnostics from 'node:diagnostics_channel'
import { createServer, type Server } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { ApiVersions, Metadata, Produce, ProtocolError, encodeResponseFrame } from '@tidelog/protocol'
import {
  Connection,
  ConnectionTimeoutError,
  KafkaConnectionError,
  NoCommonVersionError,
  ProtocolViolationError,
  RequestTimeoutError,
  UnsupportedVersionError,
  type Logger,
  type RequestEvent,
} from '@tidelog/client'
import { FakeBroker, NO_RESPONSE, type FakeRequest } from './fake-broker.js'

const cleanup: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()!()
})

async function broker(): Promise<FakeBroker> {
  const b = await FakeBroker.start()
  cleanup.push(() => b.close())
  return b
}

function connection(b: { port: number }, options: Partial<ConstructorParameters<typeof Connection>[0]> = {}): Connection {
  const c = new Connection({ host: '127.0.0.1', port: b.port, nodeId: 0, ...options })
  cleanup.push(() => c.destroy())
  return c
}

/** Answers Metadata requests by echoing the first requested topic name as the cluster id. */
function echoMetadata(req: FakeRequest): unknown {
  return { brokers: [], clusterId: req.body.topics?.[0]?.name ?? null, controllerId: -1, topics: [] }
}

describe('Connection: version negotiation', () => {
  it('runs ApiVersions first and uses the highest version both sides support', async () => {
    const b = await broker()
    b.apiVersions = b.apiVersions.map((v) => (v.apiKey === Metadata.apiKey ? { ...v, maxVersion: 9 } : v))
    b.on(Metadata.apiKey, echoMetadata)
    const c = connection(b)
    await c.connect()
    expect(b.requests[0]!.header.apiKey).toBe(ApiVersions.apiKey)
    expect(b.requests[0]!.header.apiVersion).toBe(ApiVersions.maxVersion)
    expect(b.requests[0]!.body.clientSoftwareName).toBe('tidelog')
    expect(c.versions.highest(Metadata)).toBe(9)
    const res = await c.request(Metadata, { topics: [{ name: 'x' }] })
    expect(res.clusterId).toBe('x')
    expect(b.received(Metadata.apiKey)[0]!.header.apiVersion).toBe(9)
    // A caller may bound the version.
    await c.request(Metadata, { topics: [{ name: 'y' }] }, { maxVersion: 5 })
    expect(b.received(Metadata.apiKey)[1]!.header.apiVersion).toBe(5)
  })

  it('downgrades ApiVersions to the highest version the broker lists after UNSUPPORTED_VERSION (v0 body)', async () => {
    const b = await broker()
    b.apiVersions = b.apiVersions.map((v) => (v.apiKey === ApiVersions.apiKey ? { ...v, maxVersion: 2 } : v))
    b.on(ApiVersions.apiKey, (req) => {
      if (req.header.apiVersion > 2) {
        // What Kafka does (KIP-511): a v0 body with the error and its own ApiVersions range.
        return encodeResponseFrame(18, 0, req.header.correlationId, { errorCode: 35, apiKeys: [{ apiKey: 18, minVersion: 0, maxVersion: 2 }] })
      }
      return { errorCode: 0, apiKeys: b.apiVersions, throttleTimeMs: 0 }
    })
    const c = connection(b)
    await c.connect()
    expect(b.received(18).map((r) => r.header.apiVersion)).toEqual([4, 2])
    expect(c.versions.brokerRange(18)).toEqual({ minVersion: 0, maxVersion: 2 })
  })

  it('falls back to ApiVersions v0 when the error lists no versions', async () => {
    const b = await broker()
    b.on(ApiVersions.apiKey, (req) => {
      if (req.header.apiVersion > 0) return encodeResponseFrame(18, 0, req.header.correlationId, { errorCode: 35, apiKeys: [] })
      return { errorCode: 0, apiKeys: b.apiVersions }
    })
    const c = connection(b)
    await c.connect()
    expect(b.received(18).map((r) => r.header.apiVersion)).toEqual([4, 0])
  })

  it('fails with a ProtocolError when ApiVersions answers another error', async () => {
    const b = await broker()
    b.on(ApiVersions.apiKey, () => ({ errorCode: 42, apiKeys: [] }))
    const c = connection(b)
    const err = await c.connect().catch((e) => e)
    expect(err).toBeInstanceOf(ProtocolError)
    expect(err.type).toBe('INVALID_REQUEST')
    expect(c.isClosed).toBe(true)
  })

  it('throws NoCommonVersionError (an UnsupportedVersionError) when no version fits', async () => {
    const b = await broker()
    b.apiVersions = b.apiVersions
      .filter((v) => v.apiKey !== Produce.apiKey)
      .map((v) => (v.apiKey === Metadata.apiKey ? { ...v, minVersion: 0, maxVersion: 3 } : v))
    const c = connection(b)
    await c.connect()
    const e1 = await c.request(Metadata, { topics: null }, { minVersion: 4 }).catch((e) => e)
    expect(e1).toBeInstanceOf(NoCommonVersionError)
    expect(e1).toBeInstanceOf(UnsupportedVersionError)
    expect(e1.brokerVersions).toEqual({ minVersion: 0, maxVersion: 3 })
    expect(e1.message).toMatch(/supports Metadata \(key 3\) versions 0-3/)
    const e2 = await c.request(Produce, { acks: 1, timeoutMs: 1, topicData: [] } as never).catch((e) => e)
    expect(e2).toBeInstanceOf(NoCommonVersionError)
    expect(e2.message).toMatch(/does not support Produce/)
    expect(c.versions.supports(Produce)).toBe(false)
  })
})

describe('Connection: pipelining and correlation', () => {
  it('keeps many requests in flight and matches every response', async () => {
    const b = await broker()
    const held: FakeRequest[] = []
    b.on(Metadata.apiKey, (req) => {
      held.push(req)
      // Answer all at once, in order, after the last one arrived: all were in flight together.
      if (held.length === 100) for (const r of held) b.respond(r, echoMetadata(r))
      return NO_RESPONSE
    })
    const c = connection(b)
    await c.connect()
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => c.request(Metadata, { topics: [{ name: `t${i}` }] })))
    expect(results.map((r) => r.clusterId)).toEqual(Array.from({ length: 100 }, (_, i) => `t${i}`))
    const ids = b.received(Metadata.apiKey).map((r) => r.header.correlationId)
    expect(new Set(ids).size).toBe(100)
    expect(c.inFlightCount).toBe(0)
  })

  it('closes the connection on a response out of order (Kafka answers in order)', async () => {
    const b = await broker()
    const held: FakeRequest[] = []
    b.on(Metadata.apiKey, (req) => {
      held.push(req)
      if (held.length === 2) b.respond(held[1]!, echoMetadata(held[1]!))
      return NO_RESPONSE
    })
    const c = connection(b)
    await c.connect()
    const closed = new Promise<Error | undefined>((resolve) => c.once('close', resolve))
    const results = await Promise.allSettled([c.request(Metadata, { topics: [{ name: 'a' }] }), c.request(Metadata, { topics: [{ name: 'b' }] })])
    for (const r of results) {
      expect(r.status).toBe('rejected')
      const e = (r as PromiseRejectedResult).reason
      expect(e).toBeInstanceOf(ProtocolViolationError)
      expect(e.retriable).toBe(false)
      expect(e.message).toMatch(/answered correlation id \d+, but the oldest request in flight is Metadata/)
    }
    expect(await closed).toBeInstanceOf(ProtocolViolationError)
    expect(c.isClosed).toBe(true)
  })

  it('treats a response with nothing in flight as a protocol violation', async () => {
    const b = await broker()
    const c = connection(b)
    await c.connect()
    const closed = new Promise<Error | undefined>((resolve) => c.once('close', resolve))
    b.connections[0]!.write(encodeResponseFrame(3, 12, 99, { brokers: [], topics: [] }))
    const err = await closed
    expect(err).toBeInstanceOf(ProtocolViolationError)
    expect(err!.message).toMatch(/no request was in flight/)
  })

  it('fails only the request whose response body cannot be decoded', async () => {
    const b = await broker()
    let n = 0
    b.on(Metadata.apiKey, (req) => {
      if (n++ === 0) {
        const frame = Buffer.alloc(4 + 4 + 3)
        frame.writeInt32BE(7, 0)
        frame.writeInt32BE(req.header.correlationId, 4)
        return frame
      }
      return echoMetadata(req)
    })
    const c = connection(b)
    await c.connect()
    const [bad, good] = await Promise.allSettled([c.request(Metadata, { topics: [{ name: 'a' }] }), c.request(Metadata, { topics: [{ name: 'b' }] })])
    expect(bad.status).toBe('rejected')
    expect((bad as PromiseRejectedResult).reason.name).toBe('DecodeError')
    expect(good.status === 'fulfilled' && good.value.clusterId).toBe('b')
    expect(c.isReady).toBe(true)
  })

  it('closes on a response frame above maxFrameBytes', async () => {
    const b = await broker()
    b.on(Metadata.apiKey, () => {
      const frame = Buffer.alloc(8)
      frame.writeInt32BE(10_000_000, 0)
      return frame
    })
    const c = connection(b, { maxFrameBytes: 1_000_000 })
    await c.connect()
    const err = await c.request(Metadata, { topics: null }).catch((e) => e)
    expect(err).toBeInstanceOf(ProtocolViolationError)
    expect(err.message).toMatch(/exceeds the maximum/)
  })
})

describe('Connection: timeouts and closing', () => {
  it('fails a request that gets no answer with RequestTimeoutError and closes the connection', async () => {
    const b = await broker()
    b.on(Metadata.apiKey, () => NO_RESPONSE)
    const c = connection(b)
    await c.connect()
    const started = performance.now()
    const slow = c.request(Metadata, { topics: [{ name: 'a' }] }, { timeoutMs: 150 }).catch((e) => e)
    const other = c.request(Metadata, { topics: [{ name: 'b' }] }).catch((e) => e)
    const e1 = await slow
    const e2 = await other
    const elapsed = performance.now() - started
    expect(e1).toBeInstanceOf(RequestTimeoutError)
    expect(e1.retriable).toBe(true)
    expect(e1.apiName).toBe('Metadata')
    expect(e1.timeoutMs).toBe(150)
    expect(elapsed).toBeGreaterThanOrEqual(145)
    expect(elapsed).toBeLessThan(2000)
    expect(e2).toBeInstanceOf(KafkaConnectionError)
    expect(e2.retriable).toBe(true)
    expect(e2.cause).toBe(e1)
    expect(c.isClosed).toBe(true)
  })

  it('does not time out requests that were answered', async () => {
    const b = await broker()
    b.on(Metadata.apiKey, echoMetadata)
    const c = connection(b, { requestTimeoutMs: 100 })
    await c.connect()
    for (let i = 0; i < 5; i++) await c.request(Metadata, { topics: [{ name: `t${i}` }] })
    await new Promise((r) => setTimeout(r, 250))
    expect(c.isReady).toBe(true)
  })

  it('resolves a request that expects no response (acks=0) once written, and keeps correlation in step', async () => {
    const b = await broker()
    b.on(Produce.apiKey, () => NO_RESPONSE)
    b.on(Metadata.apiKey, echoMetadata)
    const c = connection(b)
    await c.connect()
    const produced = await c.request(Produce, { transactionalId: null, acks: 0, timeoutMs: 1000, topicData: [] }, { expectResponse: false })
    expect(produced).toBeUndefined()
    expect(c.inFlightCount).toBe(0)
    const res = await c.request(Metadata, { topics: [{ name: 'after' }] })
    expect(res.clusterId).toBe('after')
    expect(b.received(Produce.apiKey)).toHaveLength(1)
  })

  it('close() waits for requests in flight, then refuses new ones', async () => {
    const b = await broker()
    b.on(Metadata.apiKey, async (req) => {
      await new Promise((r) => setTimeout(r, 100))
      return echoMetadata(req)
    })
    const c = connection(b)
    await c.connect()
    const pending = c.request(Metadata, { topics: [{ name: 'x' }] })
    const closing = c.close()
    const refused = await c.request(Metadata, { topics: null }).catch((e) => e)
    expect(refused).toBeInstanceOf(KafkaConnectionError)
    expect(refused.message).toMatch(/closing/)
    expect((await pending).clusterId).toBe('x')
    await closing
    expect(c.isClosed).toBe(true)
  })

  it('fails requests in flight with a retriable error when the broker disconnects', async () => {
    const b = await broker()
    b.on(Metadata.apiKey, () => {
      b.dropConnections()
      return NO_RESPONSE
    })
    const c = connection(b)
    await c.connect()
    const closed = new Promise<Error | undefined>((resolve) => c.once('close', resolve))
    const err = await c.request(Metadata, { topics: null }).catch((e) => e)
    expect(err).toBeInstanceOf(KafkaConnectionError)
    expect(err.retriable).toBe(true)
    expect(await closed).toBeInstanceOf(Error)
  })

  it('reports a refused connection as a retriable KafkaConnectionError', async () => {
    const s = createServer()
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
    const port = (s.address() as { port: number }).port
    await new Promise((r) => s.close(r))
    const c = connection({ port })
    const err = await c.connect().catch((e) => e)
    expect(err).toBeInstanceOf(KafkaConnectionError)
    expect(err.retriable).toBe(true)
    expect(err.broker).toBe(`127.0.0.1:${port}`)
  })

  it('gives up connecting after connectTimeoutMs (a TLS handshake that never completes)', async () => {
    // Reads (and ignores) the ClientHello, never answers.
    const silent: Server = createServer((socket) => socket.on('error', () => {}).resume())
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r))
    cleanup.push(() => new Promise((r) => silent.close(r)))
    const c = connection({ port: (silent.address() as { port: number }).port }, { ssl: true, connectTimeoutMs: 200 })
    const started = performance.now()
    const err = await c.connect().catch((e) => e)
    expect(err).toBeInstanceOf(ConnectionTimeoutError)
    expect(performance.now() - started).toBeLessThan(2000)
    expect(c.isClosed).toBe(true)
  })
})

describe('Connection: setup timeout', () => {
  it('bounds the whole setup by connectTimeoutMs, not only TCP (a broker that never answers ApiVersions)', async () => {
    const b = await broker()
    b.on(ApiVersions.apiKey, () => NO_RESPONSE)
    const c = connection(b, { connectTimeoutMs: 200, requestTimeoutMs: 30_000 })
    const started = performance.now()
    const err = await c.connect().catch((e) => e)
    expect(err).toBeInstanceOf(ConnectionTimeoutError)
    expect(err.retriable).toBe(true)
    expect(performance.now() - started).toBeLessThan(2000)
    expect(c.isClosed).toBe(true)
  })
})

describe('Connection: logging and diagnostics_channel', () => {
  it('publishes connect, request start/end/error and close events', async () => {
    const b = await broker()
    b.on(Metadata.apiKey, (req) => (req.body.topics?.[0]?.name === 'slow' ? NO_RESPONSE : echoMetadata(req)))
    const events: [string, unknown][] = []
    const names = ['tidelog:connection:connect', 'tidelog:connection:close', 'tidelog:request:start', 'tidelog:request:end', 'tidelog:request:error']
    const subs = names.map((name) => {
      const fn = (msg: unknown) => events.push([name, msg])
      diagnostics.subscribe(name, fn)
      return () => diagnostics.unsubscribe(name, fn)
    })
    cleanup.push(() => subs.forEach((u) => u()))
    const logs: string[] = []
    const logger: Logger = {
      debug: (_o, m) => logs.push(`debug ${m}`),
      info: (_o, m) => logs.push(`info ${m}`),
      warn: (_o, m) => logs.push(`warn ${m}`),
      error: (_o, m) => logs.push(`error ${m}`),
    }
    const c = connection(b, { logger })
    await c.connect()
    await c.request(Metadata, { topics: [{ name: 'x' }] })
    await c.request(Metadata, { topics: [{ name: 'slow' }] }, { timeoutMs: 50 }).catch(() => {})
    const kinds = events.map(([n]) => n)
    expect(kinds[0]).toBe('tidelog:request:start') // ApiVersions
    expect(kinds).toContain('tidelog:connection:connect')
    const end = events.find(([n, m]) => n === 'tidelog:request:end' && (m as RequestEvent).apiName === 'Metadata')![1] as RequestEvent
    expect(end).toMatchObject({ broker: b.address, nodeId: 0, apiKey: 3, apiName: 'Metadata', apiVersion: 12 })
    expect(end.correlationId).toBeGreaterThan(0)
    expect(end.durationMs).toBeGreaterThanOrEqual(0)
    const error = events.find(([n]) => n === 'tidelog:request:error')![1] as RequestEvent
    expect(error.error).toBeInstanceOf(RequestTimeoutError)
    const close = events.find(([n]) => n === 'tidelog:connection:close')![1] as { error?: Error }
    expect(close.error).toBeInstanceOf(RequestTimeoutError)
    expect(logs).toContain('debug connected')
    expect(logs).toContain('warn request timed out, closing connection')
  })
})
