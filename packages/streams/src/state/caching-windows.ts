import type { Serde } from '@tidelog/client'
import { deserializeSync, serializeSync, type FlushListener, type KeyValue, type StateStoreContext } from '../store.js'
import type { SessionStore } from '../windows/session-store.js'
import type { WindowStore } from '../windows/window-store.js'
import { Window, Windowed } from '../windows/windows.js'
import type { CacheRecordContext, DirtyEntry, ThreadCache } from './cache.js'

/** A window or session store with Java's caching layer installed: updates leave the cache at flush or eviction. */
export interface CachedWindowedStore<K, V> {
  /** Java's setFlushListener: returns whether the store caches (then the processor forwards nothing itself). */
  setFlushListener(fn: FlushListener<Windowed<K>, V>, sendOldValues: () => boolean): boolean
}

/**
 * What the window and session caching layers share (Java's CachingWindowStore / CachingSessionStore
 * bookkeeping): the thread cache and this store's namespace in it, set at init when the thread has
 * a cache, and the listener flushed entries go to.
 */
class Layer<K, V> {
  cache: ThreadCache | undefined
  namespace = ''
  listener: { fn: FlushListener<Windowed<K>, V>; sendOldValues: () => boolean } | undefined
  private context: StateStoreContext | undefined

  constructor(private readonly name: string, private readonly keySerde: Serde<K>, private readonly valueSerde: Serde<V>) {}

  open(context: StateStoreContext, flushed: (entries: DirtyEntry[]) => void): void {
    this.context = context
    if (context.cache === undefined || context.cache.maxBytes <= 0) return
    this.cache = context.cache
    this.namespace = `${context.taskId.toString()}-${this.name}`
    this.cache.register(this.namespace, flushed)
  }

  close(): void {
    this.cache?.unregister(this.namespace)
  }

  recordContext(): CacheRecordContext {
    return this.context?.recordContext?.() ?? { timestamp: this.context?.currentTimestamp() ?? 0, offset: -1, partition: -1, topic: '', headers: [] }
  }

  /** Cached entries (clean and dirty) with cache keys in [from, to], decoded by `decode`; null values are deletes not yet flushed. */
  entries<T>(decode: (key: Buffer) => T, from?: Buffer, to?: Buffer): { at: T; value: Buffer | null }[] {
    return this.cache!.range(this.namespace, from, to).map((e) => ({ at: decode(e.key), value: e.value }))
  }

  k(key: K): Buffer {
    return serializeSync(this.keySerde, key, true)
  }

  key(bytes: Buffer): K {
    return deserializeSync(this.keySerde, bytes, true)
  }

  v(value: V | null): Buffer | null {
    return value === null || value === undefined ? null : serializeSync(this.valueSerde, value, false)
  }

  value(bytes: Buffer): V {
    return deserializeSync(this.valueSerde, bytes, false)
  }
}

/**
 * 8 bytes standing for Java's SegmentedCacheFunction segment id, whose size counts in the entry
 * size estimate. Ours holds the key's length, so one key's entries sit together in the cache's
 * byte order and a single-key fetch reads only them.
 */
const SEGMENT_PREFIX = 8

function prefixed(key: Buffer, fields: number, fill = 0): Buffer {
  const out = Buffer.alloc(SEGMENT_PREFIX + key.length + fields, fill)
  out.writeUInt32BE(key.length, 0)
  out.writeUInt32BE(0, 4)
  key.copy(out, SEGMENT_PREFIX)
  return out
}

function long(out: Buffer, n: number, at: number): void {
  out.writeBigInt64BE(BigInt(n), at)
}

/** Java's cache key of a window store: segment id, then WindowKeySchema's `[key][start][seqnum 0]`. */
function windowCacheKey(key: Buffer, start: number): Buffer {
  const out = prefixed(key, 12)
  long(out, start, SEGMENT_PREFIX + key.length)
  return out
}

function fromWindowCacheKey(b: Buffer): { key: Buffer; start: number } {
  const n = b.length - 12
  return { key: b.subarray(SEGMENT_PREFIX, n), start: Number(b.readBigInt64BE(n)) }
}

/** Java's cache key of a session store: segment id, then SessionKeySchema's `[key][end][start]`. */
function sessionCacheKey(key: Buffer, start: number, end: number): Buffer {
  const out = prefixed(key, 16)
  long(out, end, SEGMENT_PREFIX + key.length)
  long(out, start, SEGMENT_PREFIX + key.length + 8)
  return out
}

function fromSessionCacheKey(b: Buffer): { key: Buffer; start: number; end: number } {
  const n = b.length - 16
  return { key: b.subarray(SEGMENT_PREFIX, n), end: Number(b.readBigInt64BE(n)), start: Number(b.readBigInt64BE(n + 8)) }
}

/** Cache-key bounds for one key's entries from time `t` on (the first time field after the key: a window's start, a session's end). */
function oneKeyBounds(key: Buffer, t: number, fields: number, last?: number): [Buffer, Buffer] {
  const lower = prefixed(key, fields)
  long(lower, Math.max(0, t), SEGMENT_PREFIX + key.length)
  const upper = prefixed(key, fields, 0xff)
  if (last !== undefined) long(upper, last, SEGMENT_PREFIX + key.length)
  return [lower, upper]
}

const inKeyRange = (k: Buffer, from: Buffer | undefined, to: Buffer | undefined) => (from === undefined || Buffer.compare(k, from) >= 0) && (to === undefined || Buffer.compare(k, to) <= 0)

/**
 * The store's results with the cache's entries over them (Java's merged cache/store iterators),
 * in the in-memory stores' order (`order` compares two results by their time, then key bytes).
 */
function merge<T>(stored: { id: string; item: T }[], cached: { id: string; item: T | null }[], order: (a: T, b: T) => number): T[] {
  const m = new Map<string, T | null>()
  for (const s of stored) m.set(s.id, s.item)
  for (const c of cached) m.set(c.id, c.item)
  const out: T[] = []
  for (const v of m.values()) if (v !== null) out.push(v)
  return out.sort(order)
}

/**
 * Installs Java's CachingWindowStore on a window store instance (so `instanceof` checks on the
 * store still hold): puts go to the thread cache, reads see cached values first, and a flush or
 * eviction writes each dirty window to the store and tells the flush listener, skipping a delete
 * of a window the store never had.
 */
export function installWindowCache<K, V>(store: WindowStore<K, V>, keySerde: Serde<K>, valueSerde: Serde<V>): WindowStore<K, V> & CachedWindowedStore<K, V> {
  const layer = new Layer<K, V>(store.name, keySerde, valueSerde)
  const inner = {
    init: store.init.bind(store),
    flush: store.flush.bind(store),
    close: store.close.bind(store),
    put: store.put.bind(store),
    fetch: store.fetch.bind(store) as (...a: unknown[]) => any,
  }
  const s = store as WindowStore<K, V> & CachedWindowedStore<K, V>
  const size = store.windowSizeMs
  const windowed = (key: K, start: number) => new Windowed(key, new Window(start, start + size))
  const flushed = (entries: DirtyEntry[]) => {
    for (const e of entries) {
      const { key: kb, start } = fromWindowCacheKey(e.key)
      const key = layer.key(kb)
      const send = layer.listener?.sendOldValues() ?? false
      const old: V | undefined = e.value === null || send ? inner.fetch(key, start) : undefined
      if (e.value === null && old === undefined) continue
      const next = e.value === null ? null : layer.value(e.value)
      inner.put(key, next, start)
      layer.listener?.fn(windowed(key, start), next, send && old !== undefined ? old : null, e.context)
    }
  }
  /** Cached windows of keys in [from, to] starting in [timeFrom, timeTo]. */
  const cachedRange = (from: Buffer | undefined, to: Buffer | undefined, timeFrom: number, timeTo: number) =>
    layer.entries(fromWindowCacheKey, ...(from !== undefined && to !== undefined && from.equals(to) && timeTo >= 0 ? oneKeyBounds(from, timeFrom, 12, timeTo) : []))
      .filter((e) => e.at.start >= timeFrom && e.at.start <= timeTo && inKeyRange(e.at.key, from, to))
      .map((e) => ({ id: `${e.at.start}/${e.at.key.toString('latin1')}`, bytes: e.at.key, start: e.at.start, value: e.value }))
  const byStartThenKey = (a: KeyValue<Windowed<K>, V>, b: KeyValue<Windowed<K>, V>) =>
    a.key.window.start - b.key.window.start || Buffer.compare(layer.k(a.key.key), layer.k(b.key.key))
  const range = (from: K | undefined, to: K | undefined, timeFrom: number, timeTo: number, stored: KeyValue<Windowed<K>, V>[]) => {
    if (layer.cache === undefined) return stored
    const fb = from === undefined ? undefined : layer.k(from)
    const tb = to === undefined ? undefined : layer.k(to)
    return merge(
      stored.map((e) => ({ id: `${e.key.window.start}/${layer.k(e.key.key).toString('latin1')}`, item: e })),
      cachedRange(fb, tb, timeFrom, timeTo).map((c) => ({ id: c.id, item: c.value === null ? null : { key: windowed(layer.key(c.bytes), c.start), value: layer.value(c.value) } })),
      byStartThenKey,
    )
  }
  function fetch(this: unknown, ...args: unknown[]): any {
    if (layer.cache === undefined) return inner.fetch(...args)
    if (args.length === 2) {
      const [key, time] = args as [K, number]
      const hit = layer.cache.get(layer.namespace, windowCacheKey(layer.k(key), time))
      if (hit === undefined) return inner.fetch(key, time)
      return hit.value === null ? undefined : layer.value(hit.value)
    }
    if (args.length === 3) {
      const [key, from, to] = args as [K, number, number]
      const stored = (inner.fetch(key, from, to) as KeyValue<number, V>[]).map((e) => ({ key: windowed(key, e.key), value: e.value }))
      return range(key, key, from, to, stored).map((e) => ({ key: e.key.window.start, value: e.value }))
    }
    const [from, to, timeFrom, timeTo] = args as [K | undefined, K | undefined, number, number]
    return range(from, to, timeFrom, timeTo, inner.fetch(from, to, timeFrom, timeTo))
  }
  Object.assign(s, {
    init(context: StateStoreContext) {
      inner.init(context)
      layer.open(context, flushed)
    },
    setFlushListener(fn: FlushListener<Windowed<K>, V>, sendOldValues: () => boolean) {
      layer.listener = { fn, sendOldValues }
      return layer.cache !== undefined
    },
    put(key: K, value: V | null, windowStartTimestamp: number) {
      if (layer.cache === undefined) return inner.put(key, value, windowStartTimestamp)
      layer.cache.put(layer.namespace, windowCacheKey(layer.k(key), windowStartTimestamp), layer.v(value), layer.recordContext(), true)
    },
    fetch,
    backwardFetch: (...args: unknown[]) => (fetch(...args) as unknown[]).reverse(),
    fetchAll: (timeFrom: number, timeTo: number) => fetch(undefined, undefined, timeFrom, timeTo),
    backwardFetchAll: (timeFrom: number, timeTo: number) => (fetch(undefined, undefined, timeFrom, timeTo) as unknown[]).reverse(),
    all: () => fetch(undefined, undefined, 0, Number.MAX_SAFE_INTEGER),
    backwardAll: () => (fetch(undefined, undefined, 0, Number.MAX_SAFE_INTEGER) as unknown[]).reverse(),
    flush() {
      if (layer.cache !== undefined) layer.cache.flush(layer.namespace)
      inner.flush()
    },
    close() {
      // A close without a flush first (dirty) drops what the cache held, as Java's.
      layer.close()
      inner.close()
    },
  })
  return s
}

/**
 * Installs Java's CachingSessionStore on a session store instance: as installWindowCache, keyed
 * by (key, end, start); merged reads come in the in-memory store's order (end, key bytes, start).
 */
export function installSessionCache<K, V>(store: SessionStore<K, V>, keySerde: Serde<K>, valueSerde: Serde<V>): SessionStore<K, V> & CachedWindowedStore<K, V> {
  const layer = new Layer<K, V>(store.name, keySerde, valueSerde)
  const inner = {
    init: store.init.bind(store),
    flush: store.flush.bind(store),
    close: store.close.bind(store),
    put: store.put.bind(store),
    fetchSession: store.fetchSession.bind(store),
    findSessions: store.findSessions.bind(store) as (...a: unknown[]) => KeyValue<Windowed<K>, V>[],
  }
  const s = store as SessionStore<K, V> & CachedWindowedStore<K, V>
  const flushed = (entries: DirtyEntry[]) => {
    for (const e of entries) {
      const { key: kb, start, end } = fromSessionCacheKey(e.key)
      const key = layer.key(kb)
      const send = layer.listener?.sendOldValues() ?? false
      const old = e.value === null || send ? inner.fetchSession(key, start, end) : undefined
      if (e.value === null && old === undefined) continue
      const next = e.value === null ? null : layer.value(e.value)
      const w = new Windowed(key, new Window(start, end))
      inner.put(w, next)
      layer.listener?.fn(w, next, send && old !== undefined ? old : null, e.context)
    }
  }
  const order = (a: KeyValue<Windowed<K>, V>, b: KeyValue<Windowed<K>, V>) =>
    a.key.window.end - b.key.window.end || Buffer.compare(layer.k(a.key.key), layer.k(b.key.key)) || a.key.window.start - b.key.window.start
  const id = (kb: Buffer, start: number, end: number) => `${end}/${start}/${kb.toString('latin1')}`
  const merged = (stored: KeyValue<Windowed<K>, V>[], keep: (at: { key: Buffer; start: number; end: number }) => boolean, bounds: [Buffer, Buffer] | [] = []) => {
    if (layer.cache === undefined) return stored
    return merge(
      stored.map((e) => ({ id: id(layer.k(e.key.key), e.key.window.start, e.key.window.end), item: e })),
      layer.entries(fromSessionCacheKey, ...bounds).filter((c) => keep(c.at)).map((c) => ({
        id: id(c.at.key, c.at.start, c.at.end),
        item: c.value === null ? null : { key: new Windowed(layer.key(c.at.key), new Window(c.at.start, c.at.end)), value: layer.value(c.value) },
      })),
      order,
    )
  }
  function findSessions(...args: unknown[]): KeyValue<Windowed<K>, V>[] {
    const stored = inner.findSessions(...args)
    if (args.length === 2) {
      const [earliestEnd, latestEnd] = args as [number, number]
      return merged(stored, (at) => at.end >= earliestEnd && at.end <= latestEnd)
    }
    const [from, to, earliestEnd, latestStart] = (args.length === 3 ? [args[0], args[0], args[1], args[2]] : args) as [K | undefined, K | undefined, number, number]
    const fb = from === undefined ? undefined : layer.k(from)
    const tb = to === undefined ? undefined : layer.k(to)
    const one: [Buffer, Buffer] | [] = fb !== undefined && tb !== undefined && fb.equals(tb) ? oneKeyBounds(fb, earliestEnd, 16) : []
    return merged(stored, (at) => at.end >= earliestEnd && at.start <= latestStart && inKeyRange(at.key, fb, tb), one)
  }
  const put = (sessionKey: Windowed<K>, aggregate: V | null) => {
    if (layer.cache === undefined) return inner.put(sessionKey, aggregate)
    layer.cache.put(layer.namespace, sessionCacheKey(layer.k(sessionKey.key), sessionKey.window.start, sessionKey.window.end), layer.v(aggregate), layer.recordContext(), true)
  }
  Object.assign(s, {
    init(context: StateStoreContext) {
      inner.init(context)
      layer.open(context, flushed)
    },
    setFlushListener(fn: FlushListener<Windowed<K>, V>, sendOldValues: () => boolean) {
      layer.listener = { fn, sendOldValues }
      return layer.cache !== undefined
    },
    put,
    remove: (sessionKey: Windowed<K>) => put(sessionKey, null),
    fetchSession(key: K, start: number, end: number) {
      if (layer.cache === undefined) return inner.fetchSession(key, start, end)
      const hit = layer.cache.get(layer.namespace, sessionCacheKey(layer.k(key), start, end))
      if (hit === undefined) return inner.fetchSession(key, start, end)
      return hit.value === null ? undefined : layer.value(hit.value)
    },
    findSessions,
    backwardFindSessions: (key: K, earliestEnd: number, latestStart: number) => findSessions(key, earliestEnd, latestStart).reverse(),
    fetch: (key: K) => findSessions(key, 0, Number.MAX_SAFE_INTEGER),
    backwardFetch: (key: K) => findSessions(key, 0, Number.MAX_SAFE_INTEGER).reverse(),
    flush() {
      if (layer.cache !== undefined) layer.cache.flush(layer.namespace)
      inner.flush()
    },
    close() {
      layer.close()
      inner.close()
    },
  })
  return s
}
