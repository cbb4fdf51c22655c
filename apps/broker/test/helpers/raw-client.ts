import { type Socket, connect } from 'node:net'
import { FrameDecoder, Reader, decodeResponseHeader, encodeRequestFrame, getApi } from '@tidelog/protocol'

interface Pending {
  apiKey: number
  version: number
  correlationId: number
  resolve: (body: any) => void
  reject: (err: Error) => void
}

/** A bare Kafka-protocol connection for tests: typed requests, raw bytes, and what the broker does with them. */
export class RawClient {
  private readonly decoder = new FrameDecoder()
  private readonly pending: Pending[] = []
  private nextId = 1
  readonly closed: Promise<void>
  isClosed = false

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk) => {
      for (const frame of this.decoder.push(chunk)) {
        const p = this.pending.shift()
        if (p === undefined) throw new Error('response without a request')
        const r = new Reader(frame)
        const h = decodeResponseHeader(r, p.apiKey, p.version)
        if (h.correlationId !== p.correlationId) {
          p.reject(new Error(`correlation id ${h.correlationId}, expected ${p.correlationId}`))
          continue
        }
        try {
          p.resolve(getApi(p.apiKey)!.decodeResponse(r, p.version))
        } catch (err) {
          p.reject(err as Error)
        }
      }
    })
    socket.on('error', () => {})
    this.closed = new Promise((resolve) =>
      socket.on('close', () => {
        this.isClosed = true
        for (const p of this.pending.splice(0)) p.reject(new Error('connection closed'))
        resolve()
      }),
    )
  }

  static connect(port: number, host = '127.0.0.1'): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const s = connect(port, host, () => resolve(new RawClient(s)))
      s.once('error', reject)
    })
  }

  /** Sends a request; resolves with the decoded response body. */
  request<T = any>(apiKey: number, version: number, body: unknown): Promise<T> {
    const correlationId = this.nextId++
    const frame = encodeRequestFrame({ apiKey, apiVersion: version, correlationId, clientId: 'raw' }, body)
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ apiKey, version, correlationId, resolve, reject })
      this.socket.write(frame)
    })
  }

  /** Sends a request that gets no response (acks=0 produce). */
  fireAndForget(apiKey: number, version: number, body: unknown): void {
    const frame = encodeRequestFrame({ apiKey, apiVersion: version, correlationId: this.nextId++, clientId: 'raw' }, body)
    this.socket.write(frame)
  }

  /** Expects the next response to be for a request written by hand. */
  expect<T = any>(apiKey: number, version: number, correlationId: number): Promise<T> {
    return new Promise<T>((resolve, reject) => this.pending.push({ apiKey, version, correlationId, resolve, reject }))
  }

  write(bytes: Uint8Array): void {
    this.socket.write(bytes)
  }

  close(): void {
    this.socket.destroy()
  }
}
