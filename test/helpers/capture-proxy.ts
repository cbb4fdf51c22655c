/**
 * A TCP proxy that records every request and response frame passing between a
 * client and a broker, so tests can check our codec against bytes real peers wrote.
 */
import { createServer, connect, type Server, type Socket } from 'node:net'
import { FrameDecoder } from '@tidelog/protocol'

export interface CapturedExchange {
  /** The whole request frame body: header + request, without the size prefix. */
  request: Buffer
  /** The response frame body (header + response), when one came back. */
  response?: Buffer
}

export interface CaptureProxy {
  port: number
  exchanges: CapturedExchange[]
  close(): Promise<void>
}

export async function startCaptureProxy(target: () => { host: string; port: number }, listenPort = 0): Promise<CaptureProxy> {
  const exchanges: CapturedExchange[] = []
  const sockets = new Set<Socket>()
  const server: Server = createServer((client) => {
    const { host, port } = target()
    const upstream = connect(port, host)
    sockets.add(client)
    sockets.add(upstream)
    const fromClient = new FrameDecoder()
    const fromBroker = new FrameDecoder()
    // Kafka answers in request order on a connection, except that acks=0 produce
    // gets no answer: pair responses by correlation id.
    const open = new Map<number, CapturedExchange>()
    client.on('data', (chunk) => {
      for (const frame of fromClient.push(chunk)) {
        const ex: CapturedExchange = { request: Buffer.from(frame) }
        exchanges.push(ex)
        open.set(frame.readInt32BE(4), ex)
      }
      upstream.write(chunk)
    })
    upstream.on('data', (chunk) => {
      for (const frame of fromBroker.push(chunk)) {
        const id = frame.readInt32BE(0)
        const ex = open.get(id)
        if (ex) {
          ex.response = Buffer.from(frame)
          open.delete(id)
        }
      }
      client.write(chunk)
    })
    const end = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on('close', end)
    upstream.on('close', end)
    client.on('error', end)
    upstream.on('error', end)
  })
  await new Promise<void>((resolve) => server.listen(listenPort, '127.0.0.1', resolve))
  return {
    port: (server.address() as { port: number }).port,
    exchanges,
    async close() {
      for (const s of sockets) s.destroy()
      await new Promise((r) => server.close(r))
    },
  }
}
