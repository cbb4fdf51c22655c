/**
 * Bookkeeping for consumer-group tests: what each member was handed, what it owned in each
 * generation, what it committed; and the checks the issue asks for.
 */
import { Consumer, type ConsumerOptions, type Message, type TopicPartition } from '@tidelog/consumer'

export interface Delivery {
  member: string
  partition: number
  offset: bigint
  value: string
}

export class GroupAudit {
  readonly deliveries: Delivery[] = []
  /** generationId -> member -> owned partitions (topic:partition) once the rebalance completed. */
  readonly owners = new Map<number, Map<string, string[]>>()
  /** member -> partition -> committed offsets, in the order the member's commits succeeded. */
  readonly commits = new Map<string, Map<number, bigint[]>>()
  readonly values = new Map<string, number>()
  readonly members = new Map<string, { consumer: Consumer; run: Promise<void> }>()

  /** Starts a member that consumes until closed, recording everything. */
  async start(name: string, options: ConsumerOptions, topics: string[], onMessage?: (m: Message) => Promise<void> | void): Promise<Consumer> {
    const c = new Consumer(options)
    c.on('offsets.committed', ({ offsets }: { offsets: { partition: number; offset: bigint }[] }) => {
      let byPartition = this.commits.get(name)
      if (byPartition === undefined) this.commits.set(name, (byPartition = new Map()))
      for (const o of offsets) {
        let list = byPartition.get(o.partition)
        if (list === undefined) byPartition.set(o.partition, (list = []))
        list.push(o.offset)
      }
    })
    await c.subscribe(topics, {
      listener: {
        onPartitionsAssigned: (_added, generation) => {
          let g = this.owners.get(generation.generationId)
          if (g === undefined) this.owners.set(generation.generationId, (g = new Map()))
          g.set(name, c.assigned().map((tp: TopicPartition) => `${tp.topic}:${tp.partition}`))
        },
      },
    })
    const run = (async () => {
      for await (const m of c) {
        const value = m.value!.toString()
        this.deliveries.push({ member: name, partition: m.partition, offset: m.offset, value })
        this.values.set(value, (this.values.get(value) ?? 0) + 1)
        if (onMessage !== undefined) await onMessage(m)
      }
    })()
    this.members.set(name, { consumer: c, run })
    return c
  }

  async stop(name: string, options?: Parameters<Consumer['close']>[0]): Promise<void> {
    const m = this.members.get(name)!
    this.members.delete(name)
    await m.consumer.close(options)
    await m.run
  }

  async stopAll(): Promise<void> {
    for (const name of [...this.members.keys()]) await this.stop(name)
  }

  /** No partition is owned by two members in the same generation. */
  assertSingleOwners(): void {
    for (const [generation, byMember] of this.owners) {
      const seen = new Map<string, string>()
      for (const [member, list] of byMember) {
        for (const tp of list) {
          const other = seen.get(tp)
          if (other !== undefined) throw new Error(`generation ${generation}: ${tp} owned by ${other} and ${member}`)
          seen.set(tp, member)
        }
      }
    }
  }

  /**
   * Every duplicate delivery of a partition offset is explained by the first member's
   * uncommitted window: that member never committed past the offset.
   */
  unexplainedDuplicates(): Delivery[] {
    const first = new Map<string, Delivery>()
    const bad: Delivery[] = []
    for (const d of this.deliveries) {
      const key = `${d.partition}:${d.offset}`
      const f = first.get(key)
      if (f === undefined) {
        first.set(key, d)
        continue
      }
      const committed = this.commits.get(f.member)?.get(d.partition) ?? []
      if (committed.some((o) => o > d.offset)) bad.push(d)
    }
    return bad
  }

  /** Duplicate deliveries counted by the member that had delivered the record first. */
  duplicatesByFirstMember(): Map<string, number> {
    const first = new Map<string, string>()
    const out = new Map<string, number>()
    for (const d of this.deliveries) {
      const key = `${d.partition}:${d.offset}`
      const f = first.get(key)
      if (f === undefined) first.set(key, d.member)
      else out.set(f, (out.get(f) ?? 0) + 1)
    }
    return out
  }

  duplicates(): number {
    let n = 0
    for (const c of this.values.values()) if (c > 1) n += c - 1
    return n
  }
}
