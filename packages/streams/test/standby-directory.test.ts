import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { TaskId } from '../src/processor.js'
import type { StreamTask } from '../src/internal/task.js'
import { readCheckpoint } from '../src/runtime/checkpoint.js'
import { TaskDirectory } from '../src/runtime/task-directory.js'

/** Just what TaskDirectory reads of a task: its id and one persistent store. */
const fakeTask = (id: TaskId) => ({ id, stores: new Map([['s', { persistent: true }]]) }) as unknown as StreamTask
const changelogs = [{ store: 's', topic: 'app-s-changelog', partition: 0 }]

describe('TaskDirectory when a task moves between two threads of one instance', () => {
  it('the old owner closing late (dirty, under EOS) neither drops the new owner\'s positions nor wipes its directory', () => {
    const root = mkdtempSync(join(tmpdir(), 'tidelog-standby-dir-'))
    try {
      const dir = new TaskDirectory(root, 'app')
      const id = new TaskId(0, 0)
      const old = fakeTask(id)
      const next = fakeTask(id)
      dir.open(id, old, changelogs, true)
      dir.advance(id, 'app-s-changelog:0', 5n)
      dir.open(id, next, changelogs, true)
      dir.advance(id, 'app-s-changelog:0', 9n)
      dir.close(old, changelogs, false, true)
      expect(existsSync(dir.taskDir(id))).toBe(true)
      expect(dir.positionsOf(id).get('app-s-changelog:0')).toBe(9n)
      expect(dir.offsetSums().get('0_0')).toBe(9n)
      dir.close(next, changelogs, true, true)
      expect(readCheckpoint(join(dir.taskDir(id), '.checkpoint'))).toEqual([{ topic: 'app-s-changelog', partition: 0, offset: 9n }])
      // Closed, the task's lag now comes from its checkpoint file.
      expect(dir.offsetSums().get('0_0')).toBe(9n)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})
