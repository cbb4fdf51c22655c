import { type Socket, connect } from 'node:net'
import { ApiKeys, FrameDecoder, ZERO_UUID, encodeRequestFrame } from '@tidelog/protocol'
import { afterEach, describe, expect, it } from 'vitest'
import { type Broker, type BrokerOptions, startBroker } from '../src/index.js'
import type { Logger } from '../src/logger.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'

const sockets: Socket[] = []
let broker: Broker | undefined
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy()
  await broker?.close()
  broker = undefined
})

function captureLogger(): Logger & { lines: string[] } {
  const lines: string[] = []
  const push = (level: string) => (m: string) => lines.push(`${level} ${m}`)
  return { level: 'debug', lines, error: push('error'), warn: push('warn'), info: push('info'), debug: push('debug'), enabled: () => true }
}

async function start(opts: BrokerOptions): Promise<Broker> {
  broker = await startBroker({ port: 0, dataDir: tempDir(), ...opts })
  return broker
}

/** A raw connection from `localAddress`, with what happened to it. */
interface Peer {
  socket: Socket
  /** Resolves once the broker has closed it. */
  closed: Promise<void>
  isClosed: () => boolean
  /** Sends ApiVersions v0; resolves true when answered, false if the connection closes first. */
  apiVersions: () => Promise<boolean>
}

function peer(port: number, localAddress = '127.0.0.1'): Promise<Peer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress })
    sockets.push(socket)
    let isClosed = false
    const closed = new Promise<void>((r) => socket.once('close', () => {
      isClosed = true
      r()
    }))
    const decoder = new FrameDecoder()
    const waiting: ((answered: boolean) => void)[] = []
    socket.on('data', (chunk) => {
      for (const _ of decoder.push(chunk)) waiting.shift()?.(true)
    })
    void closed.then(() => {
      for (const w of waiting.splice(0)) w(false)
    })
    socket.on('error', () => {})
    let id = 1
    const apiVersions = () =>
      new Promise<boolean>((r) => {
        if (isClosed) return r(false)
        waiting.push(r)
        socket.write(encodeRequestFrame({ apiKey: ApiKeys.ApiVersions, apiVersion: 0, correlationId: id++, clientId: 'limits' }, {}))
      })
    socket.once('connect', () => resolve({ socket, closed, isClosed: () => isClosed, apiVersions }))
    socket.once('error', reject)
  })
}

const within = (p: Promise<unknown>, ms: number) =>
  Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))])

describe('max.connections.per.ip', () => {
  it('closes the connection over the limit at once, logs once, and leaves other addresses alone', async () => {
    const logger = captureLogger()
    const b = await start({ maxConnectionsPerIp: 3, logger })
    const first = await Promise.all([peer(b.port), peer(b.port), peer(b.port)])
    for (const p of first) expect(await p.apiVersions()).toBe(true)

    // 20 more from 127.0.0.1: each is closed before it is answered.
    const refused = await Promise.all(Array.from({ length: 20 }, () => peer(b.port)))
    const answers = await Promise.all(refused.map((p) => p.apiVersions()))
    expect(answers).toEqual(refused.map(() => false))
    expect(await within(Promise.all(refused.map((p) => p.closed)), 2000)).toBe(true)

    // Another address has its own count.
    const other = await Promise.all([peer(b.port, '127.0.0.2'), peer(b.port, '127.0.0.2'), peer(b.port, '127.0.0.2')])
    for (const p of other) expect(await p.apiVersions()).toBe(true)
    // The first three were not disturbed.
    for (const p of first) expect(await p.apiVersions()).toBe(true)

    // A slot freed is a slot reusable.
    first[0]!.socket.destroy()
    await first[0]!.closed
    await new Promise((r) => setTimeout(r, 50))
    const again = await peer(b.port)
    expect(await again.apiVersions()).toBe(true)

    const refusals = logger.lines.filter((l) => l.includes('refused'))
    expect(refusals).toEqual(['warn refused a connection from 127.0.0.1: 127.0.0.1 already has the configured maximum of 3 connections (max.connections.per.ip)'])
    await b.close()
    broker = undefined
    // The rest are summed up in one line, not 19.
    expect(logger.lines.filter((l) => l.includes('refused')).slice(1)).toEqual([
      expect.stringMatching(/^warn refused 19 more connection\(s\) in the last 60000 ms; the latest because 127\.0\.0\.1 already has/),
    ])
  })
})

describe('max.connections', () => {
  it('refuses the connection over the total, whatever its address, until one closes', async () => {
    const b = await start({ maxConnections: 4 })
    const open = await Promise.all([peer(b.port), peer(b.port), peer(b.port, '127.0.0.2'), peer(b.port, '127.0.0.3')])
    for (const p of open) expect(await p.apiVersions()).toBe(true)
    for (const addr of ['127.0.0.1', '127.0.0.4']) {
      const p = await peer(b.port, addr)
      expect(await p.apiVersions()).toBe(false)
      expect(p.isClosed()).toBe(true)
    }
    open[3]!.socket.destroy()
    await open[3]!.closed
    await new Promise((r) => setTimeout(r, 50))
    const next = await peer(b.port, '127.0.0.4')
    expect(await next.apiVersions()).toBe(true)
    for (const p of open.slice(0, 3)) expect(await p.apiVersions()).toBe(true)
  })

  it('is a flag with Kafka\'s name and default', async () => {
    const { DEFAULT_CONFIG, parseConfig, ConfigError } = await import('../src/config.js')
    expect(DEFAULT_CONFIG.maxConnections).toBe(2 ** 31 - 1)
    expect(DEFAULT_CONFIG.maxConnectionsPerIp).toBe(2 ** 31 - 1)
    expect(DEFAULT_CONFIG.connectionsMaxIdleMs).toBe(600_000)
    const r = parseConfig({ argv: ['--max-connections', '10', '--max-connections-per-ip', '2', '--connections-max-idle-ms', '-1', '--queued-max-request-bytes', '-1'], env: {} })
    expect(r.help === false && [r.config.maxConnections, r.config.maxConnectionsPerIp, r.config.connectionsMaxIdleMs, r.config.queuedMaxRequestBytes]).toEqual([10, 2, -1, -1])
    expect(() => parseConfig({ argv: ['--max-connections', '0'], env: {} })).toThrow(ConfigError)
    // Kafka's rule: the pool must hold the largest request.
    expect(() => parseConfig({ argv: ['--queued-max-request-bytes', '1048576'], env: {} })).toThrow(/at least max-request-bytes/)
  })
})

describe('connections.max.idle.ms', () => {
  it('closes idle and stalled connections, never busy ones or one owed an answer', async () => {
    const b = await start({ connectionsMaxIdleMs: 400 })
    const t0 = Date.now()
    const silent = await peer(b.port)
    // Announces a 1 MiB request, sends 10 bytes of it, stalls.
    const stalled = await peer(b.port)
    const head = Buffer.alloc(14)
    head.writeInt32BE(1 << 20)
    stalled.socket.write(head)
    const chatty = await peer(b.port)
    const talking = setInterval(() => void chatty.apiVersions(), 100)
    // A long-polling fetch (900 ms > idle) must get its answer, not a close.
    const poller = await RawClient.connect(b.port)
    await poller.request(ApiKeys.Metadata, 12, { topics: [{ name: 'idle', topicId: ZERO_UUID }], allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false })
    const fetched = poller.request(ApiKeys.Fetch, 12, {
      replicaId: -1, maxWaitMs: 900, minBytes: 1, maxBytes: 1 << 20, isolationLevel: 0, sessionId: 0, sessionEpoch: -1,
      topics: [{ topic: 'idle', partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 << 20 }] }],
      forgottenTopicsData: [], rackId: '',
    })
    try {
      await Promise.all([silent.closed, stalled.closed])
      const took = Date.now() - t0
      expect(took).toBeGreaterThanOrEqual(350)
      expect(took).toBeLessThan(2000)
      const f = await fetched
      expect(f.errorCode).toBe(0)
      expect(Date.now() - t0).toBeGreaterThanOrEqual(850)
      expect(chatty.isClosed()).toBe(false)
      expect(await chatty.apiVersions()).toBe(true)
      // Once answered and quiet, the poller is idle too.
      expect(await within(poller.closed, 1500)).toBe(true)
    } finally {
      clearInterval(talking)
      poller.close()
    }
  })

  it('-1 keeps idle connections open', async () => {
    const b = await start({ connectionsMaxIdleMs: -1 })
    const p = await peer(b.port)
    expect(await within(p.closed, 600)).toBe(false)
    expect(await p.apiVersions()).toBe(true)
  })
})

describe('refusal log', () => {
  it('logs the first refusal, then one line per interval with the count', async () => {
    const { ConnectionQuotas } = await import('../src/limits.js')
    const logger = captureLogger()
    const q = new ConnectionQuotas({ maxConnections: 1, maxConnectionsPerIp: 1, logger, refusalLogIntervalMs: 100 })
    expect(q.tryAcquire('10.0.0.1')).toBeUndefined()
    for (let i = 0; i < 500; i++) expect(q.tryAcquire(i % 2 === 0 ? '10.0.0.1' : '10.0.0.2')).toMatch(/configured maximum/)
    expect(logger.lines).toHaveLength(1)
    await new Promise((r) => setTimeout(r, 150))
    expect(logger.lines).toHaveLength(2)
    expect(logger.lines[1]).toMatch(/^warn refused 499 more connection\(s\) in the last 100 ms; the latest because the broker already has the configured maximum of 1 connections \(max\.connections\)$/)
    // Quiet again: the next refusal is logged at once, on its own.
    expect(q.tryAcquire('10.0.0.3')).toBeDefined()
    expect(logger.lines).toHaveLength(3)
    q.release('10.0.0.1')
    expect(q.open).toBe(0)
    expect(q.tryAcquire('10.0.0.3')).toBeUndefined()
    expect(q.refused).toBe(501)
    q.close()
  })
})
