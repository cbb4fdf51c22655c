import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import {
  CLEAN_SHUTDOWN_MARKER,
  LOCK_FILE,
  LOG_START_OFFSET_CHECKPOINT,
  LogDirLockedError,
  LogManager,
  RECOVERY_POINT_CHECKPOINT,
  formatCheckpoint,
  parseCheckpoint,
  readCheckpoint,
  writeFileAtomicSync,
} from '../../src/log/index.js'
import { makeBatch } from '../helpers/batches.js'
import { tempDir } from '../helpers/tmp.js'

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url))
const CHILD = fileURLToPath(new URL('../helpers/log-child.ts', import.meta.url))

function child(args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', CHILD, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 })
}

describe('LogManager', () => {
  it('writes checkpoints and a clean-shutdown marker on close, and trusts them on the next start', async () => {
    const dataDir = tempDir()
    const mgr = LogManager.open({ dataDir })
    expect(mgr.cleanStart).toBe(false)
    const a = mgr.getOrCreate('orders', 0)
    const b = mgr.getOrCreate('orders.v2-x', 3)
    a.append(makeBatch(3))
    b.append(makeBatch(2))
    b.deleteRecordsBefore(1)
    await mgr.close()
    expect(existsSync(join(dataDir, CLEAN_SHUTDOWN_MARKER))).toBe(true)
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false)
    const rp = readCheckpoint(join(dataDir, RECOVERY_POINT_CHECKPOINT))
    expect(rp.get('orders-0')?.offset).toBe(3)
    expect(rp.get('orders.v2-x-3')?.offset).toBe(2)
    expect(readCheckpoint(join(dataDir, LOG_START_OFFSET_CHECKPOINT)).get('orders.v2-x-3')?.offset).toBe(1)
    expect(readdirSync(dataDir).filter((f) => f.endsWith('.tmp'))).toEqual([])

    const again = LogManager.open({ dataDir })
    expect(again.cleanStart).toBe(true)
    expect(existsSync(join(dataDir, CLEAN_SHUTDOWN_MARKER))).toBe(false)
    expect(again.get('orders', 0)?.logEndOffset).toBe(3)
    expect(again.get('orders.v2-x', 3)?.logStartOffset).toBe(1)
    expect(again.get('orders.v2-x', 3)?.recovery.recoveredSegments).toBe(0)
    await again.close()
  })

  it('refuses a second open of the same data directory', async () => {
    const dataDir = tempDir()
    const mgr = LogManager.open({ dataDir })
    expect(() => LogManager.open({ dataDir })).toThrow(LogDirLockedError)
    const other = child(['lock', dataDir])
    expect(other.status).toBe(3)
    expect(other.stderr).toMatch(/is in use by/)
    await mgr.close()
    const third = LogManager.open({ dataDir })
    await third.close()
  })

  it('is refused while another live process holds the lock, and takes over once it dies', async () => {
    const dataDir = tempDir()
    const holder = spawn(process.execPath, ['--import', 'tsx', CHILD, 'hold', dataDir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] })
    await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()))
    expect(() => LogManager.open({ dataDir })).toThrow(new RegExp(`in use by pid ${holder.pid}`))
    holder.kill('SIGKILL')
    await new Promise((resolve) => holder.once('exit', resolve))
    const mgr = LogManager.open({ dataDir })
    await mgr.close()
  })

  it('recovers what a killed process left and keeps every append it made', async () => {
    const dataDir = tempDir()
    const r = child(['crash', dataDir, '25'])
    expect(r.status).toBe(0)
    expect(existsSync(join(dataDir, CLEAN_SHUTDOWN_MARKER))).toBe(false)
    expect(readFileSync(join(dataDir, LOCK_FILE), 'utf8')).toMatch(/^\d+ /)
    const mgr = LogManager.open({ dataDir })
    expect(mgr.cleanStart).toBe(false)
    const log = mgr.get('crash', 0)!
    expect(log.logEndOffset).toBe(50)
    expect(log.recovery.recoveredSegments).toBeGreaterThan(0)
    expect(log.append(makeBatch(1)).baseOffset).toBe(50)
    await mgr.close()
  })

  it('ignores a malformed checkpoint and recovers from the start', async () => {
    const dataDir = tempDir()
    const mgr = LogManager.open({ dataDir })
    mgr.getOrCreate('t', 0).append(makeBatch(4))
    await mgr.close()
    writeFileSync(join(dataDir, RECOVERY_POINT_CHECKPOINT), 'garbage\n')
    writeFileSync(join(dataDir, CLEAN_SHUTDOWN_MARKER), '')
    const again = LogManager.open({ dataDir })
    expect(again.get('t', 0)?.logEndOffset).toBe(4)
    await again.close()
  })

  it('deletes a partition directory', async () => {
    const dataDir = tempDir()
    const mgr = LogManager.open({ dataDir })
    mgr.getOrCreate('gone', 0).append(makeBatch(1))
    expect(mgr.deletePartition('gone', 0)).toBe(true)
    // Renamed aside at once, under Kafka's `<topic>-<partition>.<uniqueId>-delete` name...
    const names = readdirSync(dataDir).filter((f) => f.startsWith('gone'))
    expect(names).toHaveLength(1)
    expect(names[0]).toMatch(/^gone-0\.[0-9a-f]{32}-delete$/)
    expect(mgr.get('gone', 0)).toBeUndefined()
    // ...and removed off the event loop.
    await mgr.backgroundDone()
    expect(readdirSync(dataDir).some((f) => f.startsWith('gone'))).toBe(false)
    await mgr.close()
  })

  it('runs retention on its timer', async () => {
    const dataDir = tempDir()
    const size = makeBatch(1).length
    const mgr = LogManager.open({ dataDir, config: { segmentBytes: size, retentionMs: 50 }, retentionCheckIntervalMs: 20 })
    const log = mgr.getOrCreate('r', 0)
    for (let i = 0; i < 3; i++) log.append(makeBatch(1, { baseTimestamp: Date.now() - 1000 }))
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(log.logStartOffset).toBe(3)
    expect(log.logEndOffset).toBe(3)
    await mgr.close()
    expect(readCheckpoint(join(dataDir, LOG_START_OFFSET_CHECKPOINT)).get('r-0')?.offset).toBe(3)
  })
})

describe('checkpoint files', () => {
  it('round-trip in Kafka layout', () => {
    const text = formatCheckpoint([
      { topic: 'a', partition: 0, offset: 5 },
      { topic: 'b-c', partition: 12, offset: 0 },
    ])
    expect(text).toBe('0\n2\na 0 5\nb-c 12 0\n')
    expect([...parseCheckpoint(text).values()]).toEqual([
      { topic: 'a', partition: 0, offset: 5 },
      { topic: 'b-c', partition: 12, offset: 0 },
    ])
    expect(parseCheckpoint('0\n0\n').size).toBe(0)
  })

  it('reject malformed content', () => {
    expect(() => parseCheckpoint('1\n0\n')).toThrow(/version/)
    expect(() => parseCheckpoint('0\n2\na 0 1\n')).toThrow(/announces 2/)
    expect(() => parseCheckpoint('0\n1\na zero 1\n')).toThrow(/malformed/)
  })

  it('replace atomically: an interrupted write leaves the old file intact', () => {
    const dir = tempDir()
    const path = join(dir, 'cp')
    writeFileAtomicSync(path, 'old')
    // A crash between writing the temp file and the rename leaves this behind.
    writeFileSync(`${path}.tmp`, 'half-writ')
    expect(readFileSync(path, 'utf8')).toBe('old')
    writeFileAtomicSync(path, 'new')
    expect(readFileSync(path, 'utf8')).toBe('new')
    expect(existsSync(`${path}.tmp`)).toBe(false)
  })
})
