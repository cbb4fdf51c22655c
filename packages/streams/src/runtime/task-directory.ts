import { mkdirSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TaskId } from '../processor.js'
import type { StreamTask } from '../internal/task.js'
import { CHECKPOINT_FILE, deleteCheckpoint, readCheckpoint, writeCheckpoint, type CheckpointEntry } from './checkpoint.js'
import type { ChangelogPartition } from './restore.js'

/** Java's state.dir default: `${java.io.tmpdir}/kafka-streams`. */
export function defaultStateDir(): string {
  return join(tmpdir(), 'kafka-streams')
}

/**
 * Java's StateDirectory and the checkpoint side of ProcessorStateManager: one directory per
 * task, `<state.dir>/<application.id>/<taskId>`, holding `.checkpoint` (OffsetCheckpoint) with
 * the changelog offset each persistent store holds locally. In-memory stores are never
 * checkpointed (their contents die with the process), as in Java.
 */
export class TaskDirectory {
  private readonly root: string
  private readonly positions = new Map<string, Map<string, bigint>>()
  /**
   * Which task object holds each directory: a task moving between two threads of this instance
   * may be opened by its new thread before the old one closes it, and the late close must not
   * drop the new owner's positions, checkpoint them or wipe its directory.
   */
  private readonly owners = new Map<string, StreamTask>()

  constructor(stateDir: string, applicationId: string) {
    this.root = join(stateDir, applicationId)
  }

  taskDir(id: TaskId): string {
    return join(this.root, id.toString())
  }

  /**
   * The checkpointed offsets a new task's persistent stores restore after. Under
   * exactly_once_v2 the file is removed once read (Java): only a clean close writes it again,
   * so after a crash the stores are wiped and restored from the start of the committed changelog.
   */
  open(id: TaskId, task: StreamTask, changelogs: readonly ChangelogPartition[], eos: boolean): Map<string, bigint> {
    // Stateless tasks get no directory (as in Java).
    if (task.stores.size === 0) return new Map()
    const dir = this.taskDir(id)
    mkdirSync(dir, { recursive: true })
    const file = join(dir, CHECKPOINT_FILE)
    const out = new Map<string, bigint>()
    const persistent = new Set(changelogs.filter((c) => task.stores.get(c.store)?.persistent === true).map((c) => `${c.topic}:${c.partition}`))
    for (const e of readCheckpoint(file)) if (persistent.has(`${e.topic}:${e.partition}`)) out.set(`${e.topic}:${e.partition}`, e.offset)
    if (eos) deleteCheckpoint(file)
    this.positions.set(id.toString(), new Map(out))
    this.owners.set(id.toString(), task)
    return out
  }

  /** The changelog offsets an open task's stores hold (its checkpoint position; where a standby resumes reading). */
  positionsOf(id: TaskId): ReadonlyMap<string, bigint> {
    return this.positions.get(id.toString()) ?? new Map()
  }

  /**
   * Java's taskOffsetSums for the subscription: per task, the sum of the changelog offsets held
   * locally, from open tasks' positions and, for tasks not open here, their checkpoint files
   * (so a restarted instance with persistent stores gets its tasks back). -1 offsets are skipped.
   */
  offsetSums(): Map<string, bigint> {
    const out = new Map<string, bigint>()
    let dirs: string[] = []
    try {
      dirs = readdirSync(this.root).filter((d) => /^\d+_\d+$/.test(d))
    } catch {
      // No state directory yet: nothing held locally.
    }
    for (const d of dirs) {
      if (this.positions.has(d)) continue
      try {
        const sum = readCheckpoint(join(this.root, d, CHECKPOINT_FILE)).reduce((n, e) => n + (e.offset >= 0n ? e.offset : 0n), 0n)
        if (sum > 0n) out.set(d, sum)
      } catch {
        // A malformed checkpoint only matters to the task that opens it (and fails there clearly).
      }
    }
    for (const [task, m] of this.positions) {
      if (m.size > 0) out.set(task, [...m.values()].reduce((n, o) => n + (o >= 0n ? o : 0n), 0n))
    }
    return out
  }

  /** Records the changelog offset a store now holds (the last record written or restored). */
  advance(task: TaskId, changelog: string, offset: bigint): void {
    const m = this.positions.get(task.toString())
    if (m !== undefined && (m.get(changelog) ?? -1n) < offset) m.set(changelog, offset)
  }

  /** Forgets a store's position (its contents were wiped and are restored from the start). */
  forget(task: TaskId, changelog: string): void {
    this.positions.get(task.toString())?.delete(changelog)
  }

  /**
   * Clean close: checkpoint the persistent stores. Dirty close: no checkpoint, so the next owner
   * restores from the start; under exactly_once_v2 the local state may hold aborted writes, so
   * the whole task directory is wiped (Java's TaskManager closing a task dirty under EOS).
   */
  close(task: StreamTask, changelogs: readonly ChangelogPartition[], clean: boolean, eos: boolean): void {
    if (task.stores.size > 0 && this.owners.get(task.id.toString()) !== task) return
    if (clean) this.checkpoint(task, changelogs)
    else if (eos) this.wipe(task.id)
    else deleteCheckpoint(join(this.taskDir(task.id), CHECKPOINT_FILE))
    this.positions.delete(task.id.toString())
    this.owners.delete(task.id.toString())
  }

  /** Writes the task's checkpoint (after its stores were flushed): at_least_once after each commit, and on every clean close. */
  checkpoint(task: StreamTask, changelogs: readonly ChangelogPartition[]): void {
    if (task.stores.size === 0 || this.owners.get(task.id.toString()) !== task) return
    const file = join(this.taskDir(task.id), CHECKPOINT_FILE)
    const positions = this.positions.get(task.id.toString())
    const entries: CheckpointEntry[] = []
    for (const c of changelogs) {
      const offset = positions?.get(`${c.topic}:${c.partition}`)
      if (offset !== undefined && task.stores.get(c.store)?.persistent === true) entries.push({ topic: c.topic, partition: c.partition, offset })
    }
    if (entries.length > 0) writeCheckpoint(file, entries)
    else deleteCheckpoint(file)
  }

  /** Removes a task's whole directory (its local state is no longer trusted). */
  wipe(id: TaskId): void {
    rmSync(this.taskDir(id), { recursive: true, force: true })
  }
}
