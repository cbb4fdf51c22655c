import { spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { ApiKeys, ErrorCodes, ZERO_UUID, decodeRecordBatches } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { startBroker } from '../../src/index.js'
import { RawClient } from '../helpers/raw-client.js'
import { tempDir } from '../helpers/tmp.js'
import { trackOpened } from '../helpers/opened.js'

const CHILD = fileURLToPath(new URL('../helpers/delete-crash-child.ts', import.meta.url))
const ROOT = fileURLToPath(new URL('../../../../', import.meta.url))

const open = trackOpened()

function crashDuringDelete(dataDir: string, at: 'mid-rename' | 'after-commit'): Promise<NodeJS.Signals | null> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, dataDir, at], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] })
  return new Promise((resolve) => child.once('exit', (_code, signal) => resolve(signal)))
}

async function restart(dataDir: string) {
  const b = await startBroker({ port: 0, dataDir })
  open.brokers.push(b)
  const c = await RawClient.connect(b.port)
  open.clients.push(c)
  return c
}

const describeTopic = (c: RawClient, name: string) =>
  c
    .request(ApiKeys.Metadata, 12, { topics: [{ name, topicId: ZERO_UUID }], allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })
    .then((r) => r.topics[0])

async function valuesOf(c: RawClient, topic: string, partition: number): Promise<string[]> {
  const f = await c.request(ApiKeys.Fetch, 12, {
    replicaId: -1, maxWaitMs: 0, minBytes: 1, maxBytes: 1 << 20, isolationLevel: 0, sessionId: 0, sessionEpoch: -1,
    topics: [{ topic, partitions: [{ partition, fetchOffset: 0n, partitionMaxBytes: 1 << 20, logStartOffset: -1n, currentLeaderEpoch: -1 }] }],
    forgottenTopicsData: [], rackId: '',
  })
  const p = f.responses[0].partitions[0]
  expect(p.errorCode).toBe(0)
  const out: string[] = []
  for (const b of decodeRecordBatches(Buffer.from(p.records))) for (const r of b) out.push(r.value!.toString())
  return out
}

async function waitForNoDirsOf(dataDir: string, topic: string): Promise<string[]> {
  const deadline = Date.now() + 5000
  let left = readdirSync(dataDir).filter((n) => n.startsWith(`${topic}-`))
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20))
    left = readdirSync(dataDir).filter((n) => n.startsWith(`${topic}-`))
  }
  return left
}

describe('topic deletion survives a crash at any point', () => {
  it('a crash after some partition directories were renamed aside, before the commit, keeps the whole topic', async () => {
    const dataDir = tempDir()
    expect(await crashDuringDelete(dataDir, 'mid-rename')).toBe('SIGKILL')
    // Two partitions were renamed aside when the process died.
    expect(readdirSync(dataDir).filter((n) => /^doomed-\d\.[0-9a-f]{32}-delete$/.test(n))).toHaveLength(2)
    const c = await restart(dataDir)
    const t = await describeTopic(c, 'doomed')
    expect(t.errorCode).toBe(0)
    expect(t.partitions).toHaveLength(4)
    for (let p = 0; p < 4; p++) expect(await valuesOf(c, 'doomed', p)).toEqual([`doomed-${p}`])
    expect(readdirSync(dataDir).filter((n) => n.endsWith('-delete'))).toEqual([])
    expect(await valuesOf(c, 'kept', 0)).toEqual(['kept-0'])
  })

  it('a crash after the commit, before the directories are removed, never brings the topic back', async () => {
    const dataDir = tempDir()
    expect(await crashDuringDelete(dataDir, 'after-commit')).toBe('SIGKILL')
    expect(readdirSync(dataDir).filter((n) => /^doomed-\d\.[0-9a-f]{32}-delete$/.test(n))).toHaveLength(4)
    const c = await restart(dataDir)
    expect((await describeTopic(c, 'doomed')).errorCode).toBe(ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION)
    // The leftovers are removed in the background after startup.
    expect(await waitForNoDirsOf(dataDir, 'doomed')).toEqual([])
    expect(await valuesOf(c, 'kept', 0)).toEqual(['kept-0'])
  })
})
