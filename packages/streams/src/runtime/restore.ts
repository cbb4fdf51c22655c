import type { Logger } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'

/** A store the runtime can restore: InMemoryKeyValueStore, or a custom store with the same restore(). */
interface Restorable {
  restore(key: Buffer, value: Buffer | null): void
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
  brokers: string[]
  clientId: string
  logger?: Logger
  /** The main consumer: under exactly_once_v2 it reads committed, so its end offsets are last stable offsets. */
  lookup: Consumer
  readCommitted: boolean
  /** Per changelog `topic:partition`, the offset of the last record already in the store (from a checkpoint): restoring starts after it. */
  from?: ReadonlyMap<string, bigint>
  /** Told the offset of each changelog record applied (the store's position, for its checkpoint). */
  onApplied?: (changelog: string, offset: bigint) => void
}

/**
 * Java's StoreChangelogReader for one task: each logged store reads its changelog partition
 * from the checkpointed offset (or the start) up to the end offset taken now; under
 * exactly_once_v2 both the reader and the end are read_committed, so aborted writes of a
 * crashed or fenced producer are never restored. Returns how many records were applied.
 */
export async function restoreTask(task: StreamTask, changelogs: readonly ChangelogPartition[], o: RestoreOptions): Promise<number> {
  let restored = 0
  for (const cl of changelogs) {
    const store = task.stores.get(cl.store) as unknown as Restorable
    const tp = { topic: cl.topic, partition: cl.partition }
    const [end] = await o.lookup.endOffsets([tp])
    const checkpointed = o.from?.get(`${cl.topic}:${cl.partition}`)
    const start = checkpointed === undefined ? 0n : checkpointed + 1n
    if (end === undefined || end.offset <= start) continue
    const reader = new Consumer({
      brokers: o.brokers,
      clientId: o.clientId,
      autoOffsetReset: 'earliest',
      isolationLevel: o.readCommitted ? 'read_committed' : 'read_uncommitted',
      ...(o.logger ? { logger: o.logger } : {}),
    })
    const ac = new AbortController()
    // A transactional changelog can end in a commit marker, which no batch delivers: the position says when the end is reached.
    const watch = setInterval(() => {
      const p = reader.assigned().length > 0 ? reader.position(tp) : undefined
      if (p !== undefined && p >= end.offset) ac.abort()
    }, 25)
    try {
      reader.assign([tp])
      if (start > 0n) reader.seek({ ...tp, offset: start })
      // By batch position, not record offset: compaction leaves gaps in a changelog.
      for await (const batch of reader.batches({ signal: ac.signal })) {
        for (const m of batch.messages) {
          if (m.offset >= end.offset) break
          store.restore(Buffer.from(m.key!), m.value === null ? null : Buffer.from(m.value))
          restored++
          o.onApplied?.(`${cl.topic}:${cl.partition}`, m.offset)
        }
        if (batch.nextOffset >= end.offset) break
      }
    } catch (e) {
      if (!ac.signal.aborted) throw e
    } finally {
      clearInterval(watch)
      await reader.close()
    }
  }
  return restored
}
