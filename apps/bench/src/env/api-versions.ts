import { connect } from 'node:net'
import { ApiKeys, encodeRequestFrame } from '@tidelog/protocol'

/** An ApiVersions v3 request, correlation id 7. */
export const API_VERSIONS_REQUEST = encodeRequestFrame(
  { apiKey: ApiKeys.ApiVersions, apiVersion: 3, correlationId: 7, clientId: 'tidelog-bench' },
  { clientSoftwareName: 'tidelog-bench', clientSoftwareVersion: '0' },
)

/**
 * One ApiVersions round trip on a new connection: resolves true when a whole answer with our
 * correlation id and error code 0 came back, false when the broker is not there yet.
 */
export function apiVersionsAnswered(port: number, host = '127.0.0.1', timeoutMs = 2000): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, host)
    let got = Buffer.alloc(0)
    const done = (ok: boolean) => {
      clearTimeout(timer)
      s.destroy()
      resolve(ok)
    }
    const timer = setTimeout(() => done(false), timeoutMs)
    s.once('error', () => done(false))
    s.once('close', () => done(false))
    s.once('connect', () => s.write(API_VERSIONS_REQUEST))
    s.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d])
      // size, correlation id (header v0), then the body's error code
      if (got.length < 10) return
      const size = got.readInt32BE(0)
      if (got.length < 4 + size) return
      done(got.readInt32BE(4) === 7 && got.readInt16BE(8) === 0)
    })
  })
}

/** Polls every `everyMs` until the broker answers ApiVersions; resolves with the time it answered. */
export async function waitForApiVersions(port: number, deadline: number, alive: () => boolean, everyMs = 5): Promise<number> {
  for (;;) {
    if (await apiVersionsAnswered(port)) return performance.now()
    if (!alive()) throw new Error('the broker exited before answering')
    if (performance.now() > deadline) throw new Error('no ApiVersions answer in time')
    await new Promise((r) => setTimeout(r, everyMs))
  }
}
