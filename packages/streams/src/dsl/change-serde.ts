import type { Serde } from '@tidelog/client'
import { Reader, Writer } from '@tidelog/protocol'
import { StreamsException } from '../errors.js'
import { deserializeSync, serializeSync } from '../store.js'
import type { Change } from './processors.js'

/**
 * A KTable update on a repartition topic, in Java's ChangedSerializer format (KIP-904):
 * `{old}{0}`, `{new}{1}`, or `{varint newLength}{new}{old}{2}` when both are set.
 */
export function changeSerde<V>(inner: Serde<V>): Serde<Change<V>> {
  return {
    serialize: (c) => {
      const w = new Writer(64)
      if (c.newValue !== null && c.oldValue !== null) {
        const n = serializeSync(inner, c.newValue, false)
        w.varint(n.length).raw(n).raw(serializeSync(inner, c.oldValue, false)).int8(2)
      } else if (c.newValue !== null) {
        w.raw(serializeSync(inner, c.newValue, false)).int8(1)
      } else if (c.oldValue !== null) {
        w.raw(serializeSync(inner, c.oldValue, false)).int8(0)
      } else {
        throw new StreamsException('Both old and new values are null in ChangeSerializer, which is not allowed.')
      }
      return w.finish()
    },
    deserialize: (b) => {
      const flag = b[b.length - 1]
      const body = b.subarray(0, b.length - 1)
      if (flag === 0) return { newValue: null, oldValue: deserializeSync(inner, body, false) }
      if (flag === 1) return { newValue: deserializeSync(inner, body, false), oldValue: null }
      if (flag === 2) {
        const r = new Reader(body)
        const n = r.varint()
        const nv = r.raw(n)
        return { newValue: deserializeSync(inner, nv, false), oldValue: deserializeSync(inner, body.subarray(r.pos), false) }
      }
      throw new StreamsException(`Unknown encoding flag ${flag} in a Change record`)
    },
  }
}
