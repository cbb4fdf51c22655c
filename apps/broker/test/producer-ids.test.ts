import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { LogDirState } from '../src/index.js'
import { PRODUCER_IDS_FILE, ProducerIdAllocator } from '../src/producer-ids.js'
import { faultyFs } from './helpers/faulty-fs.js'
import { tempDir } from './helpers/tmp.js'

const durableEnd = (dir: string) => Number(readFileSync(join(dir, PRODUCER_IDS_FILE), 'utf8'))

describe('producer id blocks', () => {
  it('never hands out an id the file does not cover, and never blocks the event loop on its fsyncs', async () => {
    const dir = tempDir()
    // A sync fsync through this seam would stall the thread for 200 ms.
    const fs = faultyFs({ fsyncDelayMs: 200 })
    const ids = new ProducerIdAllocator(dir, fs)
    const seen: number[] = []
    for (let i = 0; i < 2500; i++) {
      const id = await ids.allocate()
      expect(id).toBeLessThan(durableEnd(dir))
      seen.push(id)
    }
    expect(seen).toEqual(Array.from({ length: 2500 }, (_, i) => i))
    // Every block was made durable off the event loop: no fsyncSync (which would block the
    // thread for 200 ms here) was called. A fact, unlike a delay bound on a loaded machine.
    expect(fs.fsyncs).toBeGreaterThan(0)
    expect(fs.syncFsyncs).toBe(0)
    // A restart (or a crash) continues after everything that may have been handed out.
    const again = new ProducerIdAllocator(dir)
    expect(await again.allocate()).toBeGreaterThanOrEqual(2500)
  })

  it('fails the allocation and takes the directory offline when the block cannot be written', async () => {
    const dir = tempDir()
    const state = new LogDirState(dir)
    const ids = new ProducerIdAllocator(dir, faultyFs({ failFsync: () => true }), state)
    await expect(ids.allocate()).rejects.toMatchObject({ errorName: 'KAFKA_STORAGE_ERROR' })
    expect(state.offline).toBe(true)
  })
})
