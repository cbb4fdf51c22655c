import { closeSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { writeFileAtomicSync } from '../log/checkpoint.js'
import type { Logger } from '../logger.js'

export const OFFSETS_FILE = 'consumer-offsets.jsonl'

export interface CommittedOffset {
  offset: number
  leaderEpoch: number
  metadata: string | null
  commitTimestamp: number
}

export interface OffsetCommit extends CommittedOffset {
  topic: string
  partition: number
}

type Line =
  | { g: string; c: [string, number, number, number, string | null, number][] }
  | { g: string; d: [string, number][] }
  | { g: string; x: 1 }

/**
 * Committed group offsets, durable across restarts. Each commit request is one
 * JSON line appended to `consumer-offsets.jsonl` with a single write (the page
 * cache makes it survive a process crash, as __consumer_offsets does in Kafka
 * without an fsync); deletions are lines too. On open the journal is replayed
 * (a torn last line is ignored) and rewritten compacted, atomically; it is
 * compacted again whenever it holds many more lines than live entries.
 */
export class OffsetsStore {
  private readonly groups = new Map<string, Map<string, Map<number, CommittedOffset>>>()
  private fd: number
  private lines = 0
  private live = 0

  private constructor(
    private readonly path: string,
    private readonly logger: Logger,
  ) {
    this.fd = -1
  }

  static open(dataDir: string, logger: Logger): OffsetsStore {
    const store = new OffsetsStore(join(dataDir, OFFSETS_FILE), logger)
    let text = ''
    try {
      text = readFileSync(store.path, 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    }
    const lines = text.split('\n')
    for (let i = 0; i < lines.length; i++) {
      const l = lines[i]!
      if (l === '') continue
      let parsed: Line
      try {
        parsed = JSON.parse(l) as Line
      } catch {
        // The last line may be torn by a crash mid-write; anything else is damage worth a word.
        if (i < lines.length - 1) logger.warn(`${OFFSETS_FILE}: skipping unreadable line ${i + 1}`)
        continue
      }
      store.apply(parsed)
    }
    store.compact()
    return store
  }

  get(group: string, topic: string, partition: number): CommittedOffset | undefined {
    return this.groups.get(group)?.get(topic)?.get(partition)
  }

  /** Every committed offset of a group, by topic then partition. */
  groupOffsets(group: string): ReadonlyMap<string, ReadonlyMap<number, CommittedOffset>> {
    return this.groups.get(group) ?? new Map()
  }

  groupIds(): string[] {
    return [...this.groups.keys()]
  }

  commit(group: string, commits: readonly OffsetCommit[]): void {
    if (commits.length === 0) return
    this.write({ g: group, c: commits.map((c) => [c.topic, c.partition, c.offset, c.leaderEpoch, c.metadata, c.commitTimestamp]) })
  }

  deleteOffsets(group: string, partitions: readonly { topic: string; partition: number }[]): void {
    if (partitions.length === 0) return
    this.write({ g: group, d: partitions.map((p) => [p.topic, p.partition]) })
  }

  deleteGroup(group: string): void {
    if (!this.groups.has(group)) return
    this.write({ g: group, x: 1 })
  }

  /** fsyncs the journal (shutdown). */
  flush(): void {
    if (this.fd >= 0) fsyncSync(this.fd)
  }

  close(): void {
    if (this.fd < 0) return
    this.flush()
    closeSync(this.fd)
    this.fd = -1
  }

  private write(line: Line): void {
    const buf = Buffer.from(JSON.stringify(line) + '\n')
    let done = 0
    while (done < buf.length) done += writeSync(this.fd, buf, done, buf.length - done)
    this.apply(line)
    this.lines++
    if (this.lines > 10_000 && this.lines > 4 * this.live) this.compact()
  }

  private apply(line: Line): void {
    const g = line.g
    if ('x' in line) {
      const groups = this.groups.get(g)
      if (groups !== undefined) for (const t of groups.values()) this.live -= t.size
      this.groups.delete(g)
      return
    }
    let topics = this.groups.get(g)
    if ('d' in line) {
      if (topics === undefined) return
      for (const [t, p] of line.d) {
        if (topics.get(t)?.delete(p) === true) this.live--
        if (topics.get(t)?.size === 0) topics.delete(t)
      }
      if (topics.size === 0) this.groups.delete(g)
      return
    }
    if (topics === undefined) this.groups.set(g, (topics = new Map()))
    for (const [t, p, offset, leaderEpoch, metadata, commitTimestamp] of line.c) {
      let parts = topics.get(t)
      if (parts === undefined) topics.set(t, (parts = new Map()))
      if (!parts.has(p)) this.live++
      parts.set(p, { offset, leaderEpoch, metadata, commitTimestamp })
    }
  }

  /** Rewrites the journal as one line per group, atomically, and reopens it for appends. */
  private compact(): void {
    const out: string[] = []
    for (const [g, topics] of this.groups) {
      const c: [string, number, number, number, string | null, number][] = []
      for (const [t, parts] of topics) {
        for (const [p, o] of parts) c.push([t, p, o.offset, o.leaderEpoch, o.metadata, o.commitTimestamp])
      }
      out.push(JSON.stringify({ g, c }))
    }
    if (this.fd >= 0) closeSync(this.fd)
    writeFileAtomicSync(this.path, out.length > 0 ? out.join('\n') + '\n' : '')
    this.fd = openSync(this.path, 'a')
    this.lines = out.length
    this.logger.debug(`${OFFSETS_FILE}: compacted to ${this.live} offset(s) in ${out.length} group(s)`)
  }
}
