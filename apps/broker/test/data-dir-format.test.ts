import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import { ApiKeys } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { DATA_DIR_FORMAT_VERSION, DataDirFormatError, DATA_DIR_FORMAT_FILE } from '../src/data-dir-format.js'
import { FORMAT_VERSION as OFFSETS_FORMAT_VERSION } from '../src/groups/offsets-format.js'
import { OFFSETS_DIR, OFFSETS_FILE, OffsetsFormatError } from '../src/groups/offsets-store.js'
import { startBroker } from '../src/index.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url))
const ROOT = fileURLToPath(new URL('../../..', import.meta.url))

async function commitAndClose(dataDir: string): Promise<void> {
  const b = await startBroker({ port: 0, dataDir })
  const c = await RawClient.connect(b.port)
  await c.request(ApiKeys.CreateTopics, 5, { topics: [{ name: 't', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }], timeoutMs: 1000, validateOnly: false })
  const r = await c.request(ApiKeys.OffsetCommit, 8, {
    groupId: 'g',
    generationIdOrMemberEpoch: -1,
    memberId: '',
    groupInstanceId: null,
    topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 7n, committedLeaderEpoch: -1, committedMetadata: null }] }],
  })
  expect(r.topics[0].partitions[0].errorCode).toBe(0)
  c.close()
  await b.close()
}

describe('data directory format version', () => {
  it('a fresh data directory gets the current format written', async () => {
    const dataDir = join(tempDir(), 'fresh')
    const b = await startBroker({ port: 0, dataDir })
    await b.close()
    expect(readFileSync(join(dataDir, DATA_DIR_FORMAT_FILE), 'utf8')).toMatch(new RegExp(`^format\\.version=${DATA_DIR_FORMAT_VERSION}$`, 'm'))
  })

  it('a directory the previous release wrote (no format file) is accepted, stamped, and keeps its data', async () => {
    const dataDir = tempDir()
    await commitAndClose(dataDir)
    rmSync(join(dataDir, DATA_DIR_FORMAT_FILE))
    const b = await startBroker({ port: 0, dataDir })
    try {
      expect(existsSync(join(dataDir, DATA_DIR_FORMAT_FILE))).toBe(true)
      const c = await RawClient.connect(b.port)
      const f = await c.request(ApiKeys.OffsetFetch, 1, { groupId: 'g', topics: [{ name: 't', partitionIndexes: [0] }] })
      expect(f.topics[0].partitions[0].committedOffset).toBe(7n)
      c.close()
    } finally {
      await b.close()
    }
  })

  it('a newer format is refused before anything in the directory is touched', async () => {
    const dataDir = tempDir()
    await commitAndClose(dataDir)
    writeFileSync(join(dataDir, DATA_DIR_FORMAT_FILE), `format.version=${DATA_DIR_FORMAT_VERSION + 1}\n`)
    const before = readdirSync(dataDir).sort()
    const offsets = readFileSync(join(dataDir, OFFSETS_DIR, OFFSETS_FILE))
    const err = await startBroker({ port: 0, dataDir }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(DataDirFormatError)
    expect((err as Error).message).toMatch(/format 2, written by a newer tidelog-broker; this one reads up to format 1/)
    // No lock, no clean-shutdown marker removed, no rewritten store.
    expect(readdirSync(dataDir).sort()).toEqual(before)
    expect(readFileSync(join(dataDir, OFFSETS_DIR, OFFSETS_FILE))).toEqual(offsets)
    expect(readFileSync(join(dataDir, DATA_DIR_FORMAT_FILE), 'utf8')).toBe(`format.version=${DATA_DIR_FORMAT_VERSION + 1}\n`)
  })

  it('an unreadable format file is refused with the file named', async () => {
    const dataDir = tempDir()
    writeFileSync(join(dataDir, DATA_DIR_FORMAT_FILE), 'format.version=two\n')
    await expect(startBroker({ port: 0, dataDir })).rejects.toThrow(/tidelog\.format does not hold a format\.version=<integer> line/)
  })

  it('the CLI exits 1 with the reason on a newer format', () => {
    const dataDir = tempDir()
    writeFileSync(join(dataDir, DATA_DIR_FORMAT_FILE), 'format.version=9\n')
    const r = spawnSync(process.execPath, ['--import', 'tsx', MAIN, '--port', '0', '--data-dir', dataDir], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, TIDELOG_CONFIG: '' },
      timeout: 30_000,
    })
    expect(r.status).toBe(1)
    expect(r.stderr).toMatch(/^tidelog-broker: cannot start: .*format 9, written by a newer tidelog-broker/m)
    expect(r.stdout).toBe('')
  })
})

describe('offsets store format version', () => {
  it('a newer offsets file is refused with a clear error and left as it was, never read as damage', async () => {
    const dataDir = tempDir()
    await commitAndClose(dataDir)
    const file = join(dataDir, OFFSETS_DIR, OFFSETS_FILE)
    const bytes = readFileSync(file)
    bytes.writeInt32BE(OFFSETS_FORMAT_VERSION + 1, 4)
    writeFileSync(file, bytes)
    const err = await startBroker({ port: 0, dataDir }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(OffsetsFormatError)
    expect((err as Error).message).toContain(
      `offsets.log has format version ${OFFSETS_FORMAT_VERSION + 1}, written by a newer tidelog-broker; this one reads up to version ${OFFSETS_FORMAT_VERSION}`,
    )
    expect(readFileSync(file)).toEqual(bytes)
    // The broker released the directory: put the first version back (older files still load) and everything is there.
    bytes.writeInt32BE(1, 4)
    writeFileSync(file, bytes)
    const b = await startBroker({ port: 0, dataDir })
    try {
      const c = await RawClient.connect(b.port)
      const f = await c.request(ApiKeys.OffsetFetch, 1, { groupId: 'g', topics: [{ name: 't', partitionIndexes: [0] }] })
      expect(f.topics[0].partitions[0].committedOffset).toBe(7n)
      c.close()
    } finally {
      await b.close()
    }
  })

  it('version 0 is not one any release wrote', () => {
    const dataDir = tempDir()
    mkdirSync(join(dataDir, OFFSETS_DIR))
    const bytes = Buffer.alloc(8)
    bytes.writeUInt32BE(0x544c434f)
    writeFileSync(join(dataDir, OFFSETS_DIR, OFFSETS_FILE), bytes)
    return expect(startBroker({ port: 0, dataDir })).rejects.toThrow(/format version 0, which no tidelog-broker wrote/)
  })
})
