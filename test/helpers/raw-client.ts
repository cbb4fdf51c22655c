/**
 * The smallest possible request/response channel over a socket, built only from
 * @tidelog/protocol: tests use it to talk to real peers (Apache Kafka) and to our
 * broker at the codec level, below any client logic.
 */
import { connect, type Socket } from 'node:net'
import {
  FrameDecoder,
  Reader,
  decodeResponseHeader,
  encodeRequestFrame,
  getApi,
} from '@tidelog/protocol'

interface Pending {
  apiKey: number
  apiVersion: number
  resolve: (v: { body: any; raw: Buffer }) => void
  reject: (e: Error) => void
}

export class RawClient {
  private readonly socket: Socket
  private readonly frames = new FrameDecoder()
  private readonly pending = new Map<number, Pending>()
  private correlationId = 1
  private closed = false

  private constructor(socket: Socket) {
    this.socket = socket
    socket.on('data', (chunk) => {
      for (const frame of this.frames.push(chunk)) this.onFrame(frame)
    })
    const fail = (err: Error) => {
      this.closed = true
      for (const p of this.pending.values()) p.reject(err)
      this.pending.clear()
    }
    socket.on('error', fail)
    socket.on('close', () => fail(new Error('connection closed')))
  }

  static async connect(host: string, port: number): Promise<RawClient> {
    const socket = connect(port, host)
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve)
      socket.once('error', reject)
    })
    socket.setNoDelay(true)
    return new RawClient(socket)
  }

  private onFrame(frame: Buffer): void {
    const correlationId = frame.readInt32BE(0)
    const p = this.pending.get(correlationId)
    if (!p) return
    this.pending.delete(correlationId)
    try {
      const r = new Reader(frame)
      decodeResponseHeader(r, p.apiKey, p.apiVersion)
      const start = r.pos
      const body = getApi(p.apiKey)!.decodeResponse(r, p.apiVersion)
      p.resolve({ body, raw: Buffer.from(frame.subarray(start)) })
    } catch (e) {
      p.reject(e as Error)
    }
  }

  /** Sends one request and resolves with the decoded response body and its raw bytes. */
  request<T = any>(apiKey: number, apiVersion: number, body: unknown, clientId = 'tidelog-test'): Promise<{ body: T; raw: Buffer }> {
    if (this.closed) return Promise.reject(new Error('connection closed'))
    const correlationId = this.correlationId++
    const frame = encodeRequestFrame({ apiKey, apiVersion, correlationId, clientId }, body)
    return new Promise((resolve, reject) => {
      this.pending.set(correlationId, { apiKey, apiVersion, resolve, reject })
      this.socket.write(frame)
    })
  }

  /** Writes raw bytes (for hostile-input tests). */
  writeRaw(bytes: Uint8Array): void {
    this.socket.write(bytes)
  }

  close(): void {
    this.closed = true
    this.socket.destroy()
  }
}
