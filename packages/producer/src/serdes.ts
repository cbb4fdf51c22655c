import { serializeWith, type SerdeContext, type Serializer } from '@tidelog/client'
import type { HeaderInput, RecordHeader } from '@tidelog/protocol'
import { SerializationError } from './errors.js'
import type { Bytes, ProducerRecord } from './record.js'

/** A record as the application gives it to a Producer<K, V>: key K, value V (null: none / a tombstone). */
export type TypedRecord<K, V> = Omit<ProducerRecord, 'key' | 'value'> & { key?: K | null; value: V | null }

export interface SerializerOptions<K, V> {
  /** Turns keys into bytes (serdes.string, serdes.json(), or your own; may be async). Default: keys are bytes or strings. */
  keySerializer?: Serializer<K>
  /** Turns values into bytes (serdes.string, serdes.json(), or your own; may be async). Default: values are bytes or strings. */
  valueSerializer?: Serializer<V>
}

function headerList(h: HeaderInput | undefined): RecordHeader[] {
  if (h === undefined || h === null) return []
  const bytes = (v: Bytes | null): Buffer | null => (v === null ? null : typeof v === 'string' ? Buffer.from(v, 'utf8') : Buffer.from(v.buffer, v.byteOffset, v.byteLength))
  if (Array.isArray(h)) return h.map((e) => ({ key: e.key, value: bytes(e.value) }))
  const out: RecordHeader[] = []
  for (const [key, v] of Object.entries(h)) {
    if (v === undefined) continue
    for (const one of Array.isArray(v) ? v : [v]) out.push({ key, value: bytes(one) })
  }
  return out
}

/**
 * Serializes records inside send(), before they are queued: the bytes queued are the
 * serializer's own, so later changes to the caller's objects change nothing (Java serializes in
 * send() too). Async serializers keep send() order: each call's records wait for the previous
 * call's to be serialized, so records still reach their partitions in call order.
 */
export class RecordSerializer<K, V> {
  readonly none: boolean
  private tail: Promise<unknown> | undefined

  constructor(
    private readonly key: Serializer<K> | undefined,
    private readonly value: Serializer<V> | undefined,
  ) {
    this.none = key === undefined && value === undefined
  }

  /** Serializes then hands the byte records to `send`, in call order. */
  run<R>(records: readonly TypedRecord<K, V>[], send: (records: ProducerRecord[]) => Promise<R>): Promise<R> {
    if (this.tail === undefined) {
      let out: ProducerRecord[] | Promise<ProducerRecord[]>
      try {
        out = this.serialize(records)
      } catch (err) {
        return Promise.reject(err)
      }
      if (!(out instanceof Promise)) return send(out)
      return this.chain(out, send)
    }
    return this.chain(
      this.tail.then(() => this.serialize(records)),
      send,
    )
  }

  private chain<R>(serialized: Promise<ProducerRecord[]>, send: (records: ProducerRecord[]) => Promise<R>): Promise<R> {
    // send() is called synchronously once serialized, so later calls queue behind it.
    const sent = serialized.then((out) => ({ p: send(out) }))
    const tail = sent.then(
      () => undefined,
      () => undefined,
    )
    this.tail = tail
    void tail.then(() => {
      if (this.tail === tail) this.tail = undefined
    })
    return sent.then((s) => s.p)
  }

  private serialize(records: readonly TypedRecord<K, V>[]): ProducerRecord[] | Promise<ProducerRecord[]> {
    const out: ProducerRecord[] = new Array(records.length)
    let pending: Promise<unknown>[] | undefined
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!
      if (r === null || typeof r !== 'object') throw new SerializationError(`send() takes records, got ${r === null ? 'null' : typeof r}`)
      const headers = this.key !== undefined || this.value !== undefined ? headerList(r.headers) : []
      const ctx = (isKey: boolean): SerdeContext => ({ topic: r.topic, partition: r.partition, headers, isKey })
      const k = this.one(this.key, r.key, ctx(true), 'key')
      const v = this.one(this.value, r.value, ctx(false), 'value')
      const rec: ProducerRecord = { ...r, key: k instanceof Promise ? null : k, value: v instanceof Promise ? null : v }
      out[i] = rec
      if (k instanceof Promise) (pending ??= []).push(k.then((b) => void (rec.key = b)))
      if (v instanceof Promise) (pending ??= []).push(v.then((b) => void (rec.value = b)))
    }
    return pending === undefined ? out : Promise.all(pending).then(() => out)
  }

  private one<T>(s: Serializer<T> | undefined, v: T | null | undefined, ctx: SerdeContext, field: 'key' | 'value'): Bytes | null | Promise<Bytes | null> {
    if (s === undefined) return (v ?? null) as Bytes | null
    const wrap = (err: unknown): never => {
      if (err instanceof SerializationError) throw err
      const e = new SerializationError(`the ${field} serializer failed for topic ${ctx.topic}: ${err instanceof Error ? err.message : String(err)}`, field)
      ;(e as { cause?: unknown }).cause = err
      throw e
    }
    try {
      const out = serializeWith(s, v, ctx)
      return out instanceof Promise ? out.catch(wrap) : out
    } catch (err) {
      return wrap(err)
    }
  }
}
