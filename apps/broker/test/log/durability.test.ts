import { dirname, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { PartitionLog } from '../../src/log/index.js'
import { makeBatch } from '../helpers/batches.js'
import { faultyFs } from '../helpers/faulty-fs.js'
import { tempDir } from '../helpers/tmp.js'

describe('directory fsyncs (power loss after a roll or a create)', () => {
  it('fsyncs a new partition directory and its parent in the first flush', async () => {
    const fs = faultyFs()
    const dir = join(tempDir(), 't-0')
    const log = PartitionLog.open({ dir, topic: 't', partition: 0, config: { flushMessages: 1 }, fs })
    log.append(makeBatch(1))
    await log.flush()
    const seg = log.active.logPath
    // The file first, then the directory entries that name it.
    expect(fs.synced).toEqual([seg, dir, dirname(dir)])
    log.append(makeBatch(1))
    await log.flush()
    expect(fs.synced.slice(3)).toEqual([seg])
    await log.close()
  })

  it('fsyncs the directory after a roll, before the flush that acknowledges returns', async () => {
    const fs = faultyFs()
    const dir = join(tempDir(), 't-0')
    const size = makeBatch(1).length
    const log = PartitionLog.open({ dir, topic: 't', partition: 0, config: { flushMessages: 1, segmentBytes: size }, fs })
    log.append(makeBatch(1))
    await log.flush()
    fs.synced.length = 0
    log.append(makeBatch(1))
    expect(log.segments).toHaveLength(2)
    await log.flush()
    expect(fs.synced).toContain(log.active.logPath)
    expect(fs.synced).toContain(dir)
    expect(log.recoveryPoint).toBe(2)
    await log.close()
  })

  it('a failed directory fsync fails the flush and does not move the recovery point', async () => {
    const fs = faultyFs({ failFsync: (p) => !p.endsWith('.log') })
    const dir = join(tempDir(), 't-0')
    const log = PartitionLog.open({ dir, topic: 't', partition: 0, config: { flushMessages: 1 }, fs })
    log.append(makeBatch(1))
    await expect(log.flush()).rejects.toMatchObject({ errorName: 'KAFKA_STORAGE_ERROR', code: 56 })
    expect(log.recoveryPoint).toBe(0)
    expect(log.isOffline).toBe(true)
    expect(() => log.append(makeBatch(1))).toThrow(/offline/)
    await expect(log.read(0, 1000)).rejects.toMatchObject({ errorName: 'KAFKA_STORAGE_ERROR' })
    await expect(log.close()).rejects.toMatchObject({ errorName: 'KAFKA_STORAGE_ERROR' })
  })
})
