import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { ApiKeys, ZERO_UUID } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { PRODUCER_SNAPSHOT, TOPICS_FILE, UnsupportedFormatError, startBroker } from '../src/index.js'
import { PRODUCER_SNAPSHOT_VERSION } from '../src/log/index.js'
import { faultyFs } from './helpers/faulty-fs.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'
import { trackOpened } from './helpers/opened.js'

const open = trackOpened()

async function start(dataDir: string, fs = faultyFs()) {
  const b = await startBroker({ port: 0, dataDir, fs })
  open.brokers.push(b)
  const c = await RawClient.connect(b.port)
  open.clients.push(c)
  return { b, c, fs }
}

const createTopics = (c: RawClient, names: string[]) =>
  c.request(ApiKeys.CreateTopics, 7, {
    topics: names.map((name) => ({ name, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] })),
    timeoutMs: 30_000,
    validateOnly: false,
  })

const listed = (dataDir: string): string[] => (JSON.parse(readFileSync(join(dataDir, TOPICS_FILE), 'utf8')) as { topics: { name: string }[] }).topics.map((t) => t.name)

describe('topics.json', () => {
  it('records a bulk create with a couple of writes, not one per topic, before acknowledging it', async () => {
    const dataDir = tempDir()
    const { c, fs } = await start(dataDir)
    let writes = 0
    fs.plan.beforeRename = (_from, to) => {
      if (basename(to) === TOPICS_FILE) writes++
    }
    const names = Array.from({ length: 500 }, (_, i) => `bulk-${i}`)
    const r = await createTopics(c, names)
    expect(r.topics.every((t: { errorCode: number }) => t.errorCode === 0)).toBe(true)
    // Durable when acknowledged: the file already lists every topic.
    expect(listed(dataDir)).toHaveLength(500)
    expect(writes).toBeLessThanOrEqual(2)

    // Many clients creating at once coalesce too.
    writes = 0
    const more = await Promise.all(Array.from({ length: 50 }, (_, i) => createTopics(c, [`one-${i}`])))
    expect(more.every((m) => m.topics[0].errorCode === 0)).toBe(true)
    expect(listed(dataDir)).toHaveLength(550)
    expect(writes).toBeLessThan(50)
  })

  it('loads a file without a format version, and refuses to start on a newer version', async () => {
    const dataDir = tempDir()
    mkdirSync(join(dataDir, 'old-0'))
    writeFileSync(join(dataDir, TOPICS_FILE), JSON.stringify({ topics: [{ name: 'old', topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', partitions: 2, configs: {} }] }))
    const { b, c } = await start(dataDir)
    const md = await c.request(ApiKeys.Metadata, 12, { topics: [{ name: 'old', topicId: ZERO_UUID }], allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })
    expect(md.topics[0]).toMatchObject({ errorCode: 0, topicId: 'AAAAAAAAAAAAAAAAAAAAAQ' })
    expect(md.topics[0].partitions).toHaveLength(2)
    await b.close()
    open.brokers.length = 0
    expect(JSON.parse(readFileSync(join(dataDir, TOPICS_FILE), 'utf8')).version).toBe(1)

    const newer = tempDir()
    const future = JSON.stringify({ version: 2, topics: [], somethingNew: true })
    writeFileSync(join(newer, TOPICS_FILE), future)
    const err = await startBroker({ port: 0, dataDir: newer }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(UnsupportedFormatError)
    expect((err as Error).message).toMatch(/topics\.json has format version 2, newer than the 1/)
    // Not treated as damage: the file is left as the newer release wrote it.
    expect(readFileSync(join(newer, TOPICS_FILE), 'utf8')).toBe(future)
    // And the data directory is not left locked.
    writeFileSync(join(newer, TOPICS_FILE), JSON.stringify({ version: 1, topics: [] }))
    const ok = await startBroker({ port: 0, dataDir: newer })
    await ok.close()
  })

  it('refuses to start on a producer-state snapshot of a newer version, and loads one without a version', async () => {
    const dataDir = tempDir()
    const { b, c } = await start(dataDir)
    await createTopics(c, ['p'])
    await b.close()
    open.brokers.length = 0
    const snapshot = join(dataDir, 'p-0', PRODUCER_SNAPSHOT)
    const written = JSON.parse(readFileSync(snapshot, 'utf8')) as { version: number; offset: number }
    expect(written.version).toBe(PRODUCER_SNAPSHOT_VERSION)

    writeFileSync(snapshot, JSON.stringify({ offset: 0, producers: [] }))
    const again = await startBroker({ port: 0, dataDir })
    await again.close()

    writeFileSync(snapshot, JSON.stringify({ version: 7, offset: 0, producers: [] }))
    const err = await startBroker({ port: 0, dataDir }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(UnsupportedFormatError)
    expect((err as Error).message).toContain('producer-state.snapshot has format version 7')
  })
})
