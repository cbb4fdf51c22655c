import type { Headers } from '../record.js'

/** What a cached write remembers of the record that made it (Java's ProcessorRecordContext). */
export interface CacheRecordContext {
  timestamp: number
  offset: number
  partition: number
  topic: string
  headers: Headers
}

export interface DirtyEntry {
  key: Buffer
  /** null: a delete. */
  value: Buffer | null
  context: CacheRecordContext
}

interface Node extends DirtyEntry {
  dirty: boolean
  size: number
}

/**
 * Java's LRUNode.size + LRUCacheEntry + ProcessorRecordContext#residentMemorySizeEstimate: the key,
 * three 8-byte references, the dirty flag, the value, timestamp, offset, partition, the topic's
 * chars and the headers' keys and values.
 */
function sizeOf(key: Buffer, value: Buffer | null, c: CacheRecordContext): number {
  let headers = 0
  for (const h of c.headers) headers += h.key.length + (h.value === null || h.value === undefined ? 0 : h.value.length)
  return key.length + 24 + 1 + (value === null ? 0 : value.length) + 8 + 8 + c.topic.length + 4 + headers
}

/**
 * Java's NamedCache: one store's entries in LRU order (a Map keeps insertion order, so a touched
 * entry is re-inserted), and its dirty keys in the order they were last written. Flushing hands
 * every dirty entry to the listener in that order; evicting a dirty entry flushes the whole
 * cache, the evicted entry first.
 */
class NamedCache {
  private readonly nodes = new Map<string, Node>()
  private readonly dirtyKeys = new Set<string>()
  /** Every id in latin1 (unsigned byte) order, as Java's TreeMap keeps them: range reads binary-search it instead of scanning. */
  private readonly sorted: string[] = []
  size = 0

  constructor(private readonly listener: (entries: DirtyEntry[]) => void) {}

  get(id: string): Node | undefined {
    const n = this.nodes.get(id)
    if (n !== undefined) {
      this.nodes.delete(id)
      this.nodes.set(id, n)
    }
    return n
  }

  put(key: Buffer, value: Buffer | null, context: CacheRecordContext, dirty: boolean): void {
    const id = key.toString('latin1')
    const old = this.nodes.get(id)
    if (old !== undefined) {
      this.size -= old.size
      this.nodes.delete(id)
    } else {
      this.sorted.splice(this.lowerBound(id), 0, id)
    }
    const node: Node = { key, value, context, dirty, size: sizeOf(key, value, context) }
    this.nodes.set(id, node)
    this.size += node.size
    if (dirty) {
      this.dirtyKeys.delete(id)
      this.dirtyKeys.add(id)
    }
  }

  isEmpty(): boolean {
    return this.nodes.size === 0
  }

  evict(): void {
    const first = this.nodes.entries().next()
    if (first.done) return
    const [id, eldest] = first.value
    this.remove(id)
    this.size -= eldest.size
    if (eldest.dirty) this.flush(eldest, id)
  }

  flush(evicted?: Node, evictedId?: string): void {
    const entries: DirtyEntry[] = []
    if (evicted !== undefined) {
      entries.push(evicted)
      this.dirtyKeys.delete(evictedId!)
    }
    const deleted: string[] = []
    for (const id of this.dirtyKeys) {
      const n = this.nodes.get(id)!
      entries.push(n)
      n.dirty = false
      if (n.value === null) deleted.push(id)
    }
    // Cleared before the listener runs: forwarding may write to this cache again.
    this.dirtyKeys.clear()
    if (entries.length > 0) this.listener(entries)
    for (const id of deleted) {
      const n = this.nodes.get(id)
      if (n !== undefined && !n.dirty && n.value === null) {
        this.remove(id)
        this.size -= n.size
      }
    }
  }

  /** Entries (clean and dirty) with keys in [from, to] by latin1 order, which is unsigned byte order. */
  between(from: string | undefined, to: string | undefined): Node[] {
    const out: Node[] = []
    for (let i = from === undefined ? 0 : this.lowerBound(from); i < this.sorted.length; i++) {
      const id = this.sorted[i]!
      if (to !== undefined && id > to) break
      out.push(this.nodes.get(id)!)
    }
    return out
  }

  private remove(id: string): void {
    this.nodes.delete(id)
    const i = this.lowerBound(id)
    if (this.sorted[i] === id) this.sorted.splice(i, 1)
  }

  /** The first index in `sorted` whose id is >= id. */
  private lowerBound(id: string): number {
    let lo = 0
    let hi = this.sorted.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.sorted[mid]! < id) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}

/**
 * Java's ThreadCache: one budget of `statestore.cache.max.bytes` shared by every cached store of
 * a stream thread. A put that takes the total over the budget evicts from the cache it went to
 * (least recently used first) until the total fits or that cache is empty, as Java's maybeEvict.
 */
export class ThreadCache {
  private readonly caches = new Map<string, NamedCache>()

  constructor(readonly maxBytes: number) {}

  /** Registers a store's cache; its listener gets the dirty entries it flushes or evicts. */
  register(namespace: string, listener: (entries: DirtyEntry[]) => void): void {
    this.caches.set(namespace, new NamedCache(listener))
  }

  unregister(namespace: string): void {
    this.caches.delete(namespace)
  }

  get(namespace: string, key: Buffer): { value: Buffer | null } | undefined {
    return this.cache(namespace).get(key.toString('latin1'))
  }

  put(namespace: string, key: Buffer, value: Buffer | null, context: CacheRecordContext, dirty: boolean): void {
    const cache = this.cache(namespace)
    cache.put(key, value, context, dirty)
    while (this.sizeBytes() > this.maxBytes && !cache.isEmpty()) cache.evict()
  }

  flush(namespace: string): void {
    this.caches.get(namespace)?.flush()
  }

  range(namespace: string, from: Buffer | undefined, to: Buffer | undefined): { key: Buffer; value: Buffer | null }[] {
    return this.cache(namespace).between(from?.toString('latin1'), to?.toString('latin1'))
  }

  sizeBytes(): number {
    let n = 0
    for (const c of this.caches.values()) n += c.size
    return n
  }

  private cache(namespace: string): NamedCache {
    const c = this.caches.get(namespace)
    if (c === undefined) throw new Error(`no cache registered for ${namespace}`)
    return c
  }
}
