import { afterEach, describe, expect, it } from 'vitest'
import { Metadata, ProtocolError, TidelogError } from '@tidelog/protocol'
import { Connection, ConnectionPool, ExponentialBackoff, KafkaConnectionError, parseBrokerAddress, retry } from '@tidelog/client'
import { FakeBroker } from './fake-broker.js'

const cleanup: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()!()
})

describe('ExponentialBackoff', () => {
  it('doubles from the initial delay up to the cap, within ±20% jitter (Java reconnect.backoff defaults)', () => {
    const b = new ExponentialBackoff(50, 1000)
    for (let attempt = 0; attempt < 10; attempt++) {
      const base = Math.min(50 * 2 ** attempt, 1000)
      for (let i = 0; i < 200; i++) {
        const d = b.delay(attempt)
        expect(d).toBeGreaterThanOrEqual(Math.floor(base * 0.8))
        expect(d).toBeLessThanOrEqual(Math.min(base * 1.2, 1000))
      }
    }
    const samples = new Set(Array.from({ length: 50 }, () => b.delay(2)))
    expect(samples.size).toBeGreaterThan(10)
  })

  it('is constant when max <= initial', () => {
    expect(new ExponentialBackoff(100, 100).delay(5)).toBe(100)
  })
})

describe('retry', () => {
  it('retries retriable errors only, until it succeeds', async () => {
    let calls = 0
    const result = await retry(
      async () => {
        if (++calls < 3) throw new ProtocolError(6) // NOT_LEADER_OR_FOLLOWER
        return 'ok'
      },
      { timeoutMs: 5000, backoff: new ExponentialBackoff(5, 20) },
    )
    expect(result).toBe('ok')
    expect(calls).toBe(3)

    let calls2 = 0
    const err = await retry(
      async () => {
        calls2++
        throw new ProtocolError(36) // TOPIC_ALREADY_EXISTS
      },
      { timeoutMs: 5000 },
    ).catch((e) => e)
    expect(err.type).toBe('TOPIC_ALREADY_EXISTS')
    expect(calls2).toBe(1)

    let calls3 = 0
    await expect(
      retry(async () => {
        calls3++
        throw new Error('plain error')
      }, { timeoutMs: 5000 }),
    ).rejects.toThrow('plain error')
    expect(calls3).toBe(1)
  })

  it('stops at the deadline and rethrows the last error', async () => {
    const started = performance.now()
    let calls = 0
    const err = await retry(
      async () => {
        calls++
        throw new TidelogError(`attempt ${calls}`, { retriable: true })
      },
      { timeoutMs: 300, backoff: new ExponentialBackoff(40, 80, 2, 0) },
    ).catch((e) => e)
    const elapsed = performance.now() - started
    expect(err.message).toBe(`attempt ${calls}`)
    expect(calls).toBeGreaterThanOrEqual(3)
    expect(elapsed).toBeLessThan(400)
  })
})

describe('ConnectionPool', () => {
  it('reconnects with exponential backoff and jitter, and resets after a success', async () => {
    const b = await FakeBroker.start()
    cleanup.push(() => b.close())
    const accepted: number[] = []
    let refuse = true
    b.onConnection = () => {
      accepted.push(performance.now())
      return !refuse
    }
    const pool = new ConnectionPool({ factory: (t) => new Connection({ host: t.host, port: t.port, nodeId: t.nodeId }) })
    cleanup.push(() => pool.close())
    const target = { nodeId: 0, host: '127.0.0.1', port: b.port }
    for (let i = 0; i < 6; i++) {
      const err = await pool.get(target).catch((e) => e)
      expect(err).toBeInstanceOf(KafkaConnectionError)
      expect(err.retriable).toBe(true)
    }
    const gaps = accepted.slice(1).map((t, i) => t - accepted[i]!)
    // 50, 100, 200, 400, 800 ms (±20%), plus scheduling slack.
    gaps.forEach((gap, i) => {
      const base = Math.min(50 * 2 ** i, 1000)
      expect(gap).toBeGreaterThanOrEqual(base * 0.8 - 5)
      expect(gap).toBeLessThan(base * 1.2 + 150)
    })
    expect(pool.isBackingOff(0)).toBe(true)

    refuse = false
    const conn = await pool.get(target)
    expect(conn.isReady).toBe(true)
    expect(await pool.get(target)).toBe(conn)
    // After a ready connection drops, the next attempt waits only the initial backoff.
    const before = accepted.length
    b.dropConnections()
    await new Promise((r) => conn.once('close', r))
    const again = await pool.get(target)
    expect(again).not.toBe(conn)
    expect(accepted.length).toBe(before + 1)
    expect(accepted.at(-1)! - accepted.at(-2)!).toBeLessThan(1000)
  })

  it('shares one connection attempt between concurrent callers and fails waiters when closed', async () => {
    const b = await FakeBroker.start()
    cleanup.push(() => b.close())
    b.on(Metadata.apiKey, () => ({ brokers: [], topics: [] }))
    const pool = new ConnectionPool({ factory: (t) => new Connection({ host: t.host, port: t.port, nodeId: t.nodeId }) })
    const target = { nodeId: 7, host: '127.0.0.1', port: b.port }
    const conns = await Promise.all([pool.get(target), pool.get(target), pool.get(target)])
    expect(new Set(conns).size).toBe(1)
    expect(b.connections).toHaveLength(1)
    // A separate lane gets its own socket.
    const other = await pool.get(target, 'coordinator')
    expect(other).not.toBe(conns[0])
    expect(pool.inFlight(7)).toBe(0)
    await pool.close()
    expect(conns[0]!.isClosed).toBe(true)
    await expect(pool.get(target)).rejects.toThrow(/closed/)
  })
})

describe('parseBrokerAddress', () => {
  it('parses host:port, bare hosts and bracketed IPv6', () => {
    expect(parseBrokerAddress('kafka-1:9093')).toEqual({ host: 'kafka-1', port: 9093 })
    expect(parseBrokerAddress('kafka-1')).toEqual({ host: 'kafka-1', port: 9092 })
    expect(parseBrokerAddress('[::1]:19092')).toEqual({ host: '::1', port: 19092 })
    expect(parseBrokerAddress('PLAINTEXT://h:1')).toEqual({ host: 'h', port: 1 })
    expect(() => parseBrokerAddress('h:0')).toThrow(TypeError)
    expect(() => parseBrokerAddress('::1:9092')).toThrow(/brackets/)
    expect(() => parseBrokerAddress('h:x')).toThrow(TypeError)
  })
})
