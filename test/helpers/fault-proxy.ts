/**
 * A seeded TCP fault proxy between clients and a broker: it forwards bytes both ways and, while
 * faults are on, strikes in the middle of a chunk (so mid-request or mid-response, never only on
 * frame boundaries) with one of
 *
 * - cut: both sockets destroyed after part of the chunk went through (a reset connection);
 * - stall: the rest of the chunk and everything after it in that direction held back for a
 *   while (a congested or paused link: the client's request timeout may fire, or not);
 * - half-close: part of the chunk, then FIN in that direction only (a peer that shut down its
 *   write side: the other end must notice the end of stream, not wait for its timeout).
 *
 * The broker must advertise the proxy's port (--advertised-port), or clients would go around it
 * after their first Metadata. The same seed gives the same decisions for the same traffic; the
 * traffic itself depends on timing, so a run is bounded and reproducible in kind, not byte for byte.
 */
import { connect, createServer, type Server, type Socket } from 'node:net'

export type FaultKind = 'cut' | 'stall' | 'halfClose'
/** request: client to broker; response: broker to client. */
export type FaultDirection = 'request' | 'response'

export interface FaultRates {
  /** The chance that a fault strikes a chunk, per chunk forwarded in either direction. */
  perChunk: number
  /**
   * Only connections whose first request names a client id this accepts are struck (the
   * request header's client_id); the rest are forwarded faithfully. Default: every connection.
   */
  clientIds?: (clientId: string | null) => boolean
  /** Relative weights of the kinds (default 1 each). */
  weights?: Partial<Record<FaultKind, number>>
  /** How long a stall holds a direction back, ms: [min, max] (default [50, 1500]). */
  stallMs?: readonly [number, number]
}

export interface FaultProxy {
  readonly host: string
  readonly port: number
  /** Faults from now on; null forwards faithfully (open connections keep their held bytes' schedule). */
  setFaults(rates: FaultRates | null): void
  /** How many of each fault struck, by direction, and how many connections were proxied. */
  readonly stats: { connections: number; /** Stalled bytes delivered after their sender had gone (a late first attempt). */ late: number } & Record<`${FaultKind}:${FaultDirection}`, number>
  /** Destroys every proxied connection now. */
  cutAll(): void
  close(): Promise<void>
}

/** mulberry32: a small seeded PRNG in [0, 1), so a failing run can be repeated from its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const KINDS: readonly FaultKind[] = ['cut', 'stall', 'halfClose']

/**
 * The client_id of a request header at the start of `head` (size, api key, version, correlation
 * id, then a nullable int16-length string: the same in every header version), or undefined
 * while too few bytes have come.
 */
function clientIdOf(head: Buffer): string | null | undefined {
  if (head.length < 14) return undefined
  const len = head.readInt16BE(12)
  if (len < 0) return null
  if (head.length < 14 + len) return undefined
  return head.toString('utf8', 14, 14 + len)
}

/** One direction of one connection: where its bytes go, and whether they are held back. */
interface Lane {
  readonly dir: FaultDirection
  readonly to: Socket
  held: Buffer[]
  stalled: boolean
  /** After a half-close in this direction nothing more is forwarded in it. */
  shut: boolean
  /** Its source has ended or gone: FIN once the held bytes are through. */
  endAfterFlush: boolean
}

type Address = { host: string; port: number }

/** `target` may be a function: the broker's address is then looked up per connection (it may start after the proxy, to advertise it). */
export async function startFaultProxy(opts: { target: Address | (() => Address); seed: number; host?: string; port?: number }): Promise<FaultProxy> {
  const rand = seededRandom(opts.seed)
  const host = opts.host ?? '127.0.0.1'
  let rates: FaultRates | null = null
  const sockets = new Set<Socket>()
  const timers = new Set<NodeJS.Timeout>()
  const stats = { connections: 0, late: 0 } as FaultProxy['stats']
  for (const k of KINDS) for (const d of ['request', 'response'] as const) stats[`${k}:${d}`] = 0

  const pick = (r: FaultRates): FaultKind => {
    const w = KINDS.map((k) => Math.max(0, r.weights?.[k] ?? 1))
    let x = rand() * w.reduce((a, b) => a + b, 0)
    for (let i = 0; i < KINDS.length; i++) if ((x -= w[i]!) < 0) return KINDS[i]!
    return 'cut'
  }

  const server: Server = createServer({ allowHalfOpen: true }, (client) => {
    stats.connections++
    const target = typeof opts.target === 'function' ? opts.target() : opts.target
    const upstream = connect({ host: target.host, port: target.port, allowHalfOpen: true })
    sockets.add(client)
    sockets.add(upstream)
    const destroyBoth = () => {
      client.destroy()
      upstream.destroy()
    }
    // Whether this connection may be struck: decided once its first request header has come.
    let eligible: boolean | undefined
    let head = Buffer.alloc(0)
    const lanes = { request: { dir: 'request', to: upstream, held: [], stalled: false, shut: false, endAfterFlush: false } as Lane, response: { dir: 'response', to: client, held: [], stalled: false, shut: false, endAfterFlush: false } as Lane }
    // When a peer goes away while bytes it sent are held by a stall, they still arrive, then the
    // FIN: a client that timed out and retried elsewhere has its first request reach the broker
    // late, as on a real congested link. Otherwise the other side goes at once.
    const gone = (lane: Lane) => {
      if (lane.stalled && !lane.shut && !lane.to.destroyed) lane.endAfterFlush = true
      else lane.to.destroy()
    }
    client.on('error', () => gone(lanes.request))
    client.on('close', () => {
      sockets.delete(client)
      gone(lanes.request)
    })
    upstream.on('error', () => gone(lanes.response))
    upstream.on('close', () => {
      sockets.delete(upstream)
      gone(lanes.response)
    })
    // A FIN from either real peer is passed on as a FIN (after anything held): the proxy must not turn a half-close into a reset.
    client.on('end', () => (lanes.request.stalled ? (lanes.request.endAfterFlush = true) : upstream.end()))
    upstream.on('end', () => (lanes.response.stalled ? (lanes.response.endAfterFlush = true) : client.end()))
    client.pause()
    upstream.once('connect', () => client.resume())

    const forward = (lane: Lane, chunk: Buffer) => {
      if (lane.shut || lane.to.destroyed) return
      if (lane.stalled) {
        lane.held.push(chunk)
        return
      }
      const r = rates
      if (eligible === undefined && lane.dir === 'request' && r !== null) {
        head = Buffer.concat([head, chunk])
        const id = clientIdOf(head)
        if (id !== undefined) {
          eligible = r.clientIds?.(id) ?? true
          head = Buffer.alloc(0)
        }
      }
      if (r === null || eligible !== true || chunk.length === 0 || rand() >= r.perChunk) {
        lane.to.write(chunk)
        return
      }
      const kind = pick(r)
      stats[`${kind}:${lane.dir}`]++
      const at = Math.floor(rand() * chunk.length)
      if (at > 0) lane.to.write(chunk.subarray(0, at))
      if (kind === 'cut') {
        destroyBoth()
      } else if (kind === 'halfClose') {
        lane.shut = true
        lane.to.end()
      } else {
        const [lo, hi] = r.stallMs ?? [50, 1500]
        lane.stalled = true
        lane.held.push(chunk.subarray(at))
        const timer = setTimeout(() => {
          timers.delete(timer)
          lane.stalled = false
          const held = lane.held
          lane.held = []
          if (!lane.to.destroyed && !lane.shut) {
            for (const b of held) lane.to.write(b)
            if (lane.endAfterFlush && held.length > 0) stats.late++
          }
          if (lane.endAfterFlush && !lane.to.destroyed) lane.to.end()
        }, lo + Math.floor(rand() * (hi - lo + 1)))
        timers.add(timer)
      }
    }
    client.on('data', (chunk: Buffer) => forward(lanes.request, chunk))
    upstream.on('data', (chunk: Buffer) => forward(lanes.response, chunk))
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(opts.port ?? 0, host, () => resolve())
  })
  const port = (server.address() as { port: number }).port
  const cutAll = () => {
    for (const s of sockets) s.destroy()
  }
  return {
    host,
    port,
    stats,
    setFaults(r) {
      if (r !== null && !(r.perChunk >= 0 && r.perChunk <= 1)) throw new RangeError(`perChunk must be in [0, 1], not ${r.perChunk}`)
      rates = r
    },
    cutAll,
    async close() {
      rates = null
      for (const t of timers) clearTimeout(t)
      timers.clear()
      cutAll()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
