/**
 * connection_creation_rate (KIP-612) over real sockets: a client reconnecting faster than its
 * IP's quota gets the extra connections held unread and then closed, as Kafka's ConnectionQuotas
 * does; other addresses' quotas and the default entity resolve as Kafka's (/ips/<ip>, then
 * /ips/<default>); removing the quota lets connections through again at once.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ApiKeys, ErrorCodes } from '@tidelog/protocol'
import { type Broker, startBroker } from '../src/index.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'

let broker: Broker | undefined
afterEach(async () => {
  await broker?.close()
  broker = undefined
})

const versions = { clientSoftwareName: 't', clientSoftwareVersion: '1' }
/** Whether a fresh connection is served: an ApiVersions answer, or the socket closed unanswered. */
async function served(port: number): Promise<boolean> {
  const c = await RawClient.connect(port)
  try {
    await c.request(ApiKeys.ApiVersions, 3, versions)
    return true
  } catch {
    return false
  } finally {
    c.close()
  }
}

async function setIpQuota(admin: RawClient, ip: string | null, value: number | null) {
  const res = await admin.request(ApiKeys.AlterClientQuotas, 1, {
    entries: [{ entity: [{ entityType: 'ip', entityName: ip }], ops: [{ key: 'connection_creation_rate', value: value ?? 0, remove: value === null }] }],
    validateOnly: false,
  })
  expect(res.entries[0].errorCode).toBe(ErrorCodes.NONE)
}

describe('connection_creation_rate', () => {
  it('holds and closes connections over the IP\'s rate; an own entity wins over the default; removal applies at once', async () => {
    // Two 10 s samples: the rate is measured over at least 10 s, so 1/s admits ten connections
    // as a first burst and refuses the eleventh (unless the ten took 10 s, which they do not).
    broker = await startBroker({ port: 0, dataDir: tempDir(), quotaWindowNum: 2, quotaWindowSizeSeconds: 10 })
    // Opened before any quota: this connection stays usable throughout.
    const admin = await RawClient.connect(broker.port)
    await setIpQuota(admin, null, 1)
    for (let i = 0; i < 10; i++) expect(await served(broker.port), `connection ${i}`).toBe(true)
    // Held unread for the throttle time, then closed without an answer.
    expect(await served(broker.port)).toBe(false)
    await setIpQuota(admin, '127.0.0.1', 1000)
    for (let i = 0; i < 5; i++) expect(await served(broker.port)).toBe(true)
    await setIpQuota(admin, '127.0.0.1', null)
    await setIpQuota(admin, null, null)
    for (let i = 0; i < 15; i++) expect(await served(broker.port)).toBe(true)
    admin.close()
  })

  it('without a quota every connection is served', async () => {
    broker = await startBroker({ port: 0, dataDir: tempDir(), quotaWindowNum: 2 })
    for (let i = 0; i < 10; i++) expect(await served(broker.port)).toBe(true)
  })
})
