import type { Consumer } from '@tidelog/consumer'

/** A store the runtime can restore: InMemoryKeyValueStore, or a custom store with the same restore(). */
interface Restorable {
  /** `timestamp`: the changelog record's (a versioned store's version time). */
  restore(key: Buffer, value: Buffer | null, timestamp: number): void
}
import type { StreamTask } from '../internal/task.js'
import type { InternalTopologyBuilder } from '../internal/builder.js'

export interface ChangelogPartition {
  store: string
  topic: string
  partition: number
}

/** The changelog partition of each logged store of a task (`<applicationId>-<store>-changelog`, partition = task partition). */
export function changelogsOf(task: StreamTask, builder: InternalTopologyBuilder, applicationId: string): ChangelogPartition[] {
  const out: ChangelogPartition[] = []
  for (const [name, store] of task.stores) {
    if (typeof (store as Partial<Restorable>).restore !== 'function' || !builder.stores.get(name)!.builder.loggingEnabled) continue
    out.push({ store: name, topic: `${applicationId}-${name}-changelog`, partition: task.id.partition })
  }
  return out
}

export interface RestoreOptions {
  /**
   * The thread's restore consumer (Java's restore consumer), read_committed under
   * exactly_once_v2 (so its end offsets are last stable offsets); assigned the task's changelog
   * partitions while it restores. It also looks the ends up: the main consumer's connection may
   * be waiting on a long-poll fetch, which the broker answers first.
   */
  reader: Consumer
  /** Per changelog `topic:partition`, the offset of the last record already in the store (from a checkpoint): restoring starts after it. */
  from?: ReadonlyMap<string, bigint>
  /** Told the offset of each changelog record applied (the store's position, for its checkpoint). */
  onApplied?: (changelog: string, offset: bigint) => void
  /** Told when a store was emptied because its checkpoint lies past its changelog's end (its position is gone). */
  onWiped?: (changelog: string) => void
}

/**
 * Java's StoreChangelogReader for one task: every logged store reads its changelog partition
 * (all at once, on the thread's restore consumer) from the checkpointed offset (or the start) up
 * to the end offset taken now; under exactly_once_v2 both the reader and the end are
 * read_committed, so aborted writes of a crashed or fenced producer are never restored. Returns
 * how many records were applied.
 */
export async function restoreTask(task: StreamTask, changelogs: readonly ChangelogPartition[], o: RestoreOptions): Promise<number> {
  if (changelogs.length === 0) return 0
  const tps = changelogs.map((c) => ({ topic: c.topic, partition: c.partition }))
  const ends = await o.reader.endOffsets(tps)
  const todo = new Map<string, { store: Restorable; start: bigint; end: bigint; tp: { topic: string; partition: number } }>()
  changelogs.forEach((c, i) => {
    const key = `${c.topic}:${c.partition}`
    const checkpointed = o.from?.get(key)
    let start = checkpointed === undefined ? 0n : checkpointed + 1n
    const end = ends[i]?.offset ?? 0n
    // Java's restore consumer has auto.offset.reset=none: a checkpoint past the changelog's end (the
    // topic was recreated, the broker lost data) marks the task corrupted, so its store starts over.
    if (start > end) {
      ;(task.stores.get(c.store) as Partial<{ wipe(): void }>).wipe?.()
      o.onWiped?.(key)
      start = 0n
    }
    if (end > start) todo.set(key, { store: task.stores.get(c.store) as unknown as Restorable, start, end, tp: tps[i]! })
  })
  if (todo.size === 0) return 0
  let restored = 0
  const reader = o.reader
  const ac = new AbortController()
  const finished = () => [...todo.values()].every((t) => (reader.position(t.tp) ?? -1n) >= t.end)
  // A transactional changelog can end in a commit marker, which no batch delivers: the positions say when the end is reached.
  reader.assign([...todo.values()].map((t) => t.tp))
  const watch = setInterval(() => {
    if (finished()) ac.abort()
  }, 20)
  try {
    for (const t of todo.values()) {
      if (t.start > 0n) reader.seek({ ...t.tp, offset: t.start })
      else await reader.seekToBeginning([t.tp])
    }
    // By batch position, not record offset: compaction leaves gaps in a changelog.
    for await (const batch of reader.batches({ signal: ac.signal })) {
      const t = todo.get(`${batch.topic}:${batch.partition}`)
      if (t === undefined) continue
      for (const m of batch.messages) {
        if (m.offset >= t.end) break
        t.store.restore(Buffer.from(m.key!), m.value === null ? null : Buffer.from(m.value), Number(m.timestamp))
        restored++
        o.onApplied?.(`${batch.topic}:${batch.partition}`, m.offset)
      }
      if (batch.nextOffset >= t.end) reader.pause([t.tp])
      if (finished()) break
    }
  } catch (e) {
    if (!ac.signal.aborted) throw e
  } finally {
    clearInterval(watch)
    reader.assign([])
  }
  return restored
}
