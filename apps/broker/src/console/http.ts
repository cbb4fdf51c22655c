import { readFile } from 'node:fs/promises'
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { BrokerContext } from '../context.js'
import type { BrokerMetrics } from '../metrics/broker-metrics.js'
import { EXPOSITION_CONTENT_TYPE } from '../metrics/exposition.js'
import { renderMetrics } from '../metrics/scrape.js'
import { ConsoleError, describeGroup, describeTopic, health, listGroups, listTopics, messages } from './api.js'
import { STATIC_FILES, staticDir } from './assets.js'

export interface ConsoleServer {
  readonly host: string
  readonly port: number
  /** http://host:port/ */
  readonly url: string
  close(): Promise<void>
}

type Route = (broker: BrokerContext, metrics: BrokerMetrics, params: string[], query: URLSearchParams) => unknown

// Read-only routes, matched in order: the console never changes the broker's state.
const ROUTES: readonly [RegExp, Route][] = [
  [/^\/api\/health$/, (b, m) => health(b, m)],
  [/^\/api\/topics$/, (b) => listTopics(b)],
  [/^\/api\/topics\/([^/]+)$/, (b, _m, [t]) => describeTopic(b, t!)],
  [/^\/api\/topics\/([^/]+)\/partitions\/([^/]+)\/messages$/, (b, _m, [t, p], q) => messages(b, t!, p!, q)],
  [/^\/api\/groups$/, (b) => listGroups(b)],
  [/^\/api\/groups\/([^/]+)$/, (b, _m, [g]) => describeGroup(b, g!)],
  [/^\/api\/throughput$/, (_b, m) => m.throughput()],
]

function send(res: ServerResponse, status: number, type: string, body: string | Buffer): void {
  res.writeHead(status, {
    'content-type': type,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    // Everything the page loads comes from this server: it works offline and runs no foreign script.
    'content-security-policy': "default-src 'self'; img-src 'self' data:",
    'x-content-type-options': 'nosniff',
  })
  res.end(body)
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(value))
}

/**
 * The broker's web console and Prometheus endpoint: one plain node:http server on
 * 127.0.0.1 (the console has no authentication of its own yet, so it is never exposed
 * beyond this machine). Pages are static files shipped in the package; data comes from
 * the JSON API, which reads the broker's own state.
 */
export async function startConsole(broker: BrokerContext, metrics: BrokerMetrics, port: number): Promise<ConsoleServer> {
  const dir = staticDir()
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD')
      sendJson(res, 405, { error: 'INVALID_REQUEST', message: `${req.method} is not served: the console is read-only` })
      return
    }
    const url = new URL(req.url ?? '/', 'http://console')
    const path = url.pathname
    if (path === '/metrics') {
      send(res, 200, EXPOSITION_CONTENT_TYPE, renderMetrics(metrics))
      return
    }
    for (const [re, route] of ROUTES) {
      const m = re.exec(path)
      if (m === null) continue
      let params: string[]
      try {
        params = m.slice(1).map((s) => decodeURIComponent(s))
      } catch {
        sendJson(res, 400, { error: 'INVALID_REQUEST', message: 'malformed percent-encoding in the path' })
        return
      }
      sendJson(res, 200, await route(broker, metrics, params, url.searchParams))
      return
    }
    const file = STATIC_FILES[path === '/' ? '/index.html' : path]
    if (file === undefined) {
      sendJson(res, 404, { error: 'NOT_FOUND', message: `no such page: ${path}` })
      return
    }
    send(res, 200, file.type, await readFile(`${dir}/${file.name}`))
  }
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) {
        res.destroy()
        return
      }
      if (err instanceof ConsoleError) {
        sendJson(res, err.status, { error: err.error, message: err.message })
        return
      }
      broker.logger.error(`console: ${req.url}: ${(err as Error)?.stack ?? String(err)}`)
      sendJson(res, 500, { error: 'UNKNOWN_SERVER_ERROR', message: (err as Error)?.message ?? String(err) })
    })
  })
  const addr = await new Promise<AddressInfo>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject)
      server.on('error', (err) => broker.logger.error(`console: ${err.message}`))
      resolve(server.address() as AddressInfo)
    })
  })
  return {
    host: addr.address,
    port: addr.port,
    url: `http://${addr.address}:${addr.port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        // Browsers keep connections alive; shutdown must not wait for them.
        server.closeAllConnections()
      }),
  }
}
