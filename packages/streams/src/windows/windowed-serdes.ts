import type { Serde } from '@tidelog/client'
import { StreamsException } from '../errors.js'
import { deserializeSync, serializeSync } from '../store.js'
import { sessionKeyBinary } from './session-store.js'
import { Window, Windowed } from './windows.js'

/**
 * Windowed keys on topics, byte for byte as Java's TimeWindowedSerializer (`[key][8-byte start]`)
 * and SessionWindowedSerializer (`[key][8-byte end][8-byte start]`), so Java consumers using
 * WindowedSerdes read our output and we read theirs.
 */
export const WindowedSerdes = {
  /** The window size is not on the wire: the deserializer needs it to give each key its end (start + size). */
  timeWindowedSerdeFrom<K>(inner: Serde<K>, windowSizeMs: number): Serde<Windowed<K>> {
    if (!Number.isSafeInteger(windowSizeMs) || windowSizeMs <= 0) throw new RangeError(`a time-windowed serde needs the window size in ms (got ${windowSizeMs})`)
    return {
      serialize: (w) => {
        const k = serializeSync(inner, w.key, true)
        const out = Buffer.alloc(k.length + 8)
        k.copy(out, 0)
        out.writeBigInt64BE(BigInt(w.window.start), k.length)
        return out
      },
      deserialize: (b) => {
        if (b.length < 8) throw new StreamsException(`a time-windowed key needs at least 8 bytes (got ${b.length})`)
        const start = Number(b.readBigInt64BE(b.length - 8))
        return new Windowed(deserializeSync(inner, b.subarray(0, b.length - 8), true), new Window(start, Math.min(start + windowSizeMs, Number.MAX_SAFE_INTEGER)))
      },
    }
  },
  sessionWindowedSerdeFrom<K>(inner: Serde<K>): Serde<Windowed<K>> {
    return {
      serialize: (w) => sessionKeyBinary(serializeSync(inner, w.key, true), w.window.start, w.window.end),
      deserialize: (b) => {
        if (b.length < 16) throw new StreamsException(`a session-windowed key needs at least 16 bytes (got ${b.length})`)
        const n = b.length - 16
        return new Windowed(deserializeSync(inner, b.subarray(0, n), true), new Window(Number(b.readBigInt64BE(n + 8)), Number(b.readBigInt64BE(n))))
      },
    }
  },
}
