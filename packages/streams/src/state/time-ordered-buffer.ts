import type { Serde } from '@tidelog/client'
import { InvalidStateStoreException } from '../errors.js'
import type { Headers } from '../record.js'
import { deserializeSync, InMemoryKeyValueBytesStore, serializeSync, type StateStore, type StateStoreContext, type StoreBuilder } from '../store.js'

/** What a buffered record remembers of its context (Java's ProcessorRecordContext). */
export interface BufferedContext {
  timestamp: number
  offset: number
  topic: string
  partition: number
  headers: Headers
}

export interface Eviction<K, V> {
  key: K
  value: V
  context: BufferedContext
}

function int32(n: number): Buffer {
  const b = Buffer.alloc(4)
  b.writeInt32BE(n)
  return b
}

function int64(n: number): Buffer {
  const b = Buffer.alloc(8)
  b.writeBigInt64BE(BigInt(n))
  return b
}

/** Java's BufferValue.serialize(8) plus the buffer time: record context, prior and old value (absent here), new value, time 0. */
function bufferValue(value: Buffer, c: BufferedContext): Buffer {
  const topic = Buffer.from(c.topic, 'utf8')
  const parts: Buffer[] = [int64(c.timestamp), int64(c.offset), int32(topic.length), topic, int32(c.partition), int32(c.headers.length)]
  for (const h of c.headers) {
    const k = Buffer.from(h.key, 'utf8')
    parts.push(int32(k.length), k)
    if (h.value === null || h.value === undefined) parts.push(int32(-1))
    else parts.push(int32(h.value.length), Buffer.from(h.value))
  }
  parts.push(int32(-1), int32(-1), int32(value.length), value, int64(0))
  return Buffer.concat(parts)
}

function readBufferValue(b: Buffer): { value: Buffer; context: BufferedContext } {
  let at = 0
  const long = () => {
    const n = Number(b.readBigInt64BE(at))
    at += 8
    return n
  }
  const int = () => {
    const n = b.readInt32BE(at)
    at += 4
    return n
  }
  const bytes = (n: number) => {
    const out = Buffer.from(b.subarray(at, at + n))
    at += n
    return out
  }
  const timestamp = long()
  const offset = long()
  const topic = bytes(int()).toString('utf8')
  const partition = int()
  const headers: { key: string; value: Buffer | null }[] = []
  for (let n = int(); n > 0; n--) {
    const key = bytes(int()).toString('utf8')
    const len = int()
    headers.push({ key, value: len < 0 ? null : bytes(len) })
  }
  for (let i = 0; i < 2; i++) {
    const len = int()
    if (len > 0) at += len
  }
  const value = bytes(int())
  return { value, context: { timestamp, offset, topic, partition, headers: headers as Headers } }
}

/**
 * Java's RocksDBTimeOrderedKeyValueBuffer, the grace buffer of a stream-table join (KIP-923):
 * records ordered by `[8-byte timestamp][key bytes][4-byte seqnum]` (TimeFirstWindowKeySchema),
 * so duplicates of a key are all kept. Its stream time is the largest timestamp put; a record
 * more than the grace period behind it is refused (the caller then joins it at once), and an
 * eviction hands out, oldest first, every record at or before stream time minus grace. Each put
 * and eviction goes to the changelog (value: Java's BufferValue layout), which restore replays.
 */
export class TimeOrderedKeyValueBuffer<K, V> implements StateStore {
  readonly persistent = false
  private readonly entries = new InMemoryKeyValueBytesStore()
  private context: StateStoreContext | undefined
  private open = false
  private observedStreamTime = -1
  private seqnum = 0

  constructor(
    readonly name: string,
    private readonly graceMs: number,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
    private readonly logging: boolean,
  ) {}

  init(context: StateStoreContext): void {
    this.context = context
    this.open = true
  }

  isOpen(): boolean {
    return this.open
  }

  flush(): void {}

  close(): void {
    this.open = false
  }

  numRecords(): number {
    return this.entries.size()
  }

  /** False when the record is too late to buffer. */
  put(key: K, value: V, context: BufferedContext): boolean {
    this.checkOpen()
    if (this.observedStreamTime - this.graceMs > context.timestamp) return false
    this.seqnum = (this.seqnum + 1) & 0x7fffffff
    const k = serializeSync(this.keySerde, key, true)
    const storeKey = Buffer.concat([int64(context.timestamp), k, int32(this.seqnum)])
    const stored = bufferValue(serializeSync(this.valueSerde, value, false), context)
    this.entries.put(storeKey, stored)
    this.observedStreamTime = Math.max(this.observedStreamTime, context.timestamp)
    if (this.logging && this.context) this.context.logChange(this.name, storeKey, stored, this.context.currentTimestamp())
    return true
  }

  /** Removes and hands out, in key order, the records at or before stream time minus grace. */
  evict(emit: (e: Eviction<K, V>) => void): void {
    this.checkOpen()
    const upTo = this.observedStreamTime - this.graceMs
    if (upTo < 0) return
    for (const [storeKey, stored] of this.entries.range(undefined, int64(upTo + 1))) {
      if (Number(storeKey.readBigInt64BE(0)) > upTo) break
      this.entries.put(storeKey, null)
      if (this.logging && this.context) this.context.logChange(this.name, storeKey, null, this.context.currentTimestamp())
      const { value, context } = readBufferValue(stored)
      emit({ key: deserializeSync(this.keySerde, storeKey.subarray(8, storeKey.length - 4), true), value: deserializeSync(this.valueSerde, value, false), context })
    }
  }

  /** Applies a changelog record while restoring (Java's segmented store restore: stream time follows the keys). */
  restore(key: Buffer, value: Buffer | null): void {
    this.entries.put(key, value)
    if (value !== null) this.observedStreamTime = Math.max(this.observedStreamTime, Number(key.readBigInt64BE(0)))
  }

  wipe(): void {
    this.entries.clear()
    this.observedStreamTime = -1
  }

  private checkOpen(): void {
    if (!this.open) throw new InvalidStateStoreException(`Store ${this.name} is currently closed.`)
  }
}

/** Java's RocksDBTimeOrderedKeyValueBuffer.Builder: logged (compacted changelog) unless turned off. */
export class TimeOrderedKeyValueBufferBuilder<K, V> implements StoreBuilder<TimeOrderedKeyValueBuffer<K, V>> {
  loggingEnabled = true
  logConfig: Readonly<Record<string, string>> = {}

  constructor(readonly name: string, private readonly graceMs: number, private readonly keySerde: Serde<K>, private readonly valueSerde: Serde<V>) {}

  withLoggingEnabled(config: Record<string, string> = {}): this {
    this.loggingEnabled = true
    this.logConfig = { ...config }
    return this
  }

  withLoggingDisabled(): this {
    this.loggingEnabled = false
    this.logConfig = {}
    return this
  }

  build(): TimeOrderedKeyValueBuffer<K, V> {
    return new TimeOrderedKeyValueBuffer(this.name, this.graceMs, this.keySerde, this.valueSerde, this.loggingEnabled)
  }
}
