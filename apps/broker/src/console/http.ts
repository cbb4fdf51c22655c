import { readFile } from 'node:fs/promises'
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { BrokerContext } from '../context.js'
import type { BrokerMetrics } from '../metrics/broker-metrics.js'
import { EXPOSITION_CONTENT_TYPE } from '../metrics/exposition.js'
import { renderMetrics } from '../metrics/scrape.js'
import { ConsoleError, describeGroup, describeTopic, health, listGroups, listTopics, messages, throughput } from './api.js'
import { type Access, CHALLENGE, type ConsoleAuth, DESCRIBE, LoginRequired, openAccess } from './auth.js'
import { STATIC_FILES, staticDir } from './assets.js'

export interface ConsoleServer {
  readonly host: string
  readonly port: number
  /** http://host:port/ */
  readonly url: string
  close(): Promise<void>
}

interface RouteContext {
  broker: BrokerContext
  metrics: BrokerMetrics
  /** What this request's principal may see (everything when the broker has no authorizer). */
  access: Access
}

type Route = (c: RouteContext, params: string[], query: URLSearchParams) => unknown

// Read-only routes, matched in order: the console never changes the broker's state.
const ROUTES: readonly [RegExp, Route][] = [
  [/^\/api\/health$/, (c) => health(c.broker, c.metrics, c.access)],
  [/^\/api\/topics$/, (c) => listTopics(c.broker, c.access)],
  [/^\/api\/topics\/([^/]+)$/, (c, [t]) => describeTopic(c.broker, c.access, t!)],
  [/^\/api\/topics\/([^/]+)\/partitions\/([^/]+)\/messages$/, (c, [t, p], q) => messages(c.broker, c.access, t!, p!, q)],
  [/^\/api\/groups$/, (c) => listGroups(c.broker, c.access)],
  [/^\/api\/groups\/([^/]+)$/, (c, [g]) => describeGroup(c.broker, c.access, g!)],
  [/^\/api\/throughput$/, (c) => throughput(c.metrics, c.access)],
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
 * 127.0.0.1 only (plain HTTP: a password sent to it never leaves this machine). Pages are
 * static files shipped in the package; data comes from the JSON API, which reads the broker's
 * own state. With `auth` (the broker has security on) every request, pages and /metrics
 * included, needs a login, and each answer holds only what the principal may see.
 */
export async function startConsole(broker: BrokerContext, metrics: BrokerMetrics, port: number, auth?: ConsoleAuth): Promise<ConsoleServer> {
  const dir = staticDir()
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD')
      sendJson(res, 405, { error: 'INVALID_REQUEST', message: `${req.method} is not served: the console is read-only` })
      return
    }
    const access = auth === undefined ? openAccess(null) : await auth.access(req)
    const url = new URL(req.url ?? '/', 'http://console')
    const path = url.pathname
    if (path === '/metrics') {
      // Every topic and group is in a scrape: only a principal that may describe the cluster gets one.
      if (!access.cluster(DESCRIBE)) throw new ConsoleError(403, 'CLUSTER_AUTHORIZATION_FAILED', `${access.principal} is not authorized to describe the cluster`)
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
      sendJson(res, 200, await route({ broker, metrics, access }, params, url.searchParams))
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
      if (err instanceof LoginRequired) {
        res.setHeader('www-authenticate', CHALLENGE)
        sendJson(res, 401, { error: 'SASL_AUTHENTICATION_FAILED', message: err.message })
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
