import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { InvalidStateStoreException } from '../errors.js'
import type { KafkaStreams } from '../runtime/kafka-streams.js'
import type { Serializer } from '../serdes.js'
import { parseHostInfo, type HostInfo } from './metadata.js'
import { QueryableStoreTypes, StoreQueryParameters, type ReadOnlyKeyValueStore } from './stores.js'

export interface KeyQueryServerOptions<K> {
  /** This instance's application.server: the HTTP server listens on its port (or `port`). */
  applicationServer: string
  /** Serializes keys as the stores' partitioning does (the key serde the topology uses). */
  keySerializer: Serializer<K>
  /** From the URL's key segment to a key; default: the string itself. */
  parseKey?: (raw: string) => K
  /** Listening port; default: applicationServer's. 0 picks a free one (then advertise what it picked). */
  port?: number
  /** Listening address; default 127.0.0.1. */
  listenHost?: string
}

export interface KeyQueryServer {
  readonly port: number
  close(): Promise<void>
}

const FORWARDED = 'x-tidelog-streams-forwarded'

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

/**
 * A small HTTP helper for interactive queries: `GET /stores/<store>/keys/<key>` answers from the
 * local store when this instance holds the key's partition (queryMetadataForKey), or forwards
 * the request once to the instance that does. 200 `{ key, value, host }`, 404 when the key has no
 * value, 503 with the error's name while stores are not queryable (rebalancing, restoring:
 * retry), 502 when the owner cannot be reached.
 */
export async function startKeyQueryServer<K>(streams: KafkaStreams, options: KeyQueryServerOptions<K>): Promise<KeyQueryServer> {
  const self: HostInfo = parseHostInfo(options.applicationServer)
  const parseKey = options.parseKey ?? ((s: string) => s as unknown as K)
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const m = /^\/stores\/([^/]+)\/keys\/([^/]+)$/.exec(req.url ?? '')
    if (req.method !== 'GET' || m === null) return send(res, 404, { error: 'NotFound', message: 'GET /stores/<store>/keys/<key>' })
    const storeName = decodeURIComponent(m[1]!)
    const rawKey = decodeURIComponent(m[2]!)
    const key = parseKey(rawKey)
    try {
      const meta = streams.queryMetadataForKey(storeName, key, options.keySerializer)
      if (meta === null) return send(res, 404, { error: 'UnknownStateStoreException', message: `no store ${storeName} in the topology` })
      if (meta.partition < 0) return send(res, 503, { error: 'InvalidStateStoreException', message: 'the assignment is not known yet (rebalancing)' })
      const here = meta.activeHost.host === self.host && meta.activeHost.port === self.port
      if (!here) {
        if (req.headers[FORWARDED] !== undefined) return send(res, 503, { error: 'InvalidStateStoreException', message: `${self.host}:${self.port} does not hold this key (the assignment moved)` })
        try {
          const r = await fetch(`http://${meta.activeHost.host}:${meta.activeHost.port}${req.url}`, { headers: { [FORWARDED]: '1' } })
          res.writeHead(r.status, { 'content-type': 'application/json' })
          res.end(await r.text())
        } catch (e) {
          send(res, 502, { error: 'ForwardFailed', message: `${meta.activeHost.host}:${meta.activeHost.port}: ${(e as Error).message}` })
        }
        return
      }
      const store = streams.store(StoreQueryParameters.fromNameAndType(storeName, QueryableStoreTypes.keyValueStore<K, unknown>()).withPartition(meta.partition)) as ReadOnlyKeyValueStore<K, unknown>
      const value = store.get(key)
      if (value === undefined) return send(res, 404, { error: 'NotFound', key: rawKey, host: `${self.host}:${self.port}` })
      send(res, 200, { key: rawKey, value: Buffer.isBuffer(value) ? value.toString('base64') : value, host: `${self.host}:${self.port}` })
    } catch (e) {
      if (e instanceof InvalidStateStoreException) return send(res, 503, { error: e.name, message: e.message })
      send(res, 500, { error: (e as Error).name ?? 'Error', message: (e as Error).message })
    }
  }
  const server = createServer((req, res) => void handle(req, res))
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? self.port, options.listenHost ?? '127.0.0.1', () => resolve())
  })
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}
