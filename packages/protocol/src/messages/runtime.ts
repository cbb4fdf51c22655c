/**
 * Small helpers shared by the generated codecs (src/messages/NN-*.ts). Internal: not part of
 * the package's public surface.
 */
import { DecodeError, EncodeError, TidelogError, UnsupportedVersionError } from '../errors/base.js'
import type { Reader } from '../wire/reader.js'
import type { TaggedField } from '../wire/types.js'
import { uvarintSize, type Writer } from '../wire/writer.js'
import type { ApiDefinition } from './api.js'

/** The default for a bytes field; a zero-length view cannot be mutated, so one can be shared. */
export const EMPTY_BYTES: Buffer = Buffer.alloc(0)

export function unsupportedVersion(name: string, apiKey: number, version: number): UnsupportedVersionError {
  return new UnsupportedVersionError(name, apiKey, version)
}

/**
 * Java's generated code throws UnsupportedVersionException when a field that a version lacks
 * holds anything but its default, unless the field is marked ignorable: silently dropping it
 * would change the request's meaning.
 */
export function absentField(field: string, versions: string, version: number): never {
  throw new EncodeError(`${field} is only in versions ${versions}; it must keep its default in version ${version}`)
}

export function nullField(field: string, version: number): never {
  throw new EncodeError(`${field} cannot be null in version ${version}`)
}

export function taggedInRigidVersion(struct: string, version: number): never {
  throw new EncodeError(`${struct} has tagged fields, but version ${version} is not flexible (KIP-482)`)
}

export function nullDecoded(r: Reader, field: string): never {
  throw new DecodeError(`${field} is not nullable but was null`, r.pos)
}

/** Wraps anything that is not already a tidelog error (e.g. a RangeError for an int16 of 70000). */
export function encodeFailure(e: unknown, what: string, version: number): Error {
  if (e instanceof TidelogError) return e
  const message = e instanceof Error ? e.message : String(e)
  return new EncodeError(`${what} v${version}: ${message}`, { cause: e })
}

/** The readers only throw DecodeError; this is a safety net so hostile bytes never escape as anything else. */
export function decodeFailure(e: unknown, r: Reader, what: string): Error {
  if (e instanceof TidelogError) return e
  const message = e instanceof Error ? e.message : String(e)
  return new DecodeError(`${what}: ${message}`, r.pos)
}

// --- tagged fields (KIP-482) -------------------------------------------------------------

/**
 * Writes the size of a tagged field whose value was written at `start`: the value is moved
 * up by the size's own length, which is cheaper than encoding the value twice.
 */
export function endTaggedField(w: Writer, start: number): void {
  const end = w.pos
  const len = end - start
  const n = uvarintSize(len)
  w.ensure(n)
  const buf = w.buf
  buf.copyWithin(start + n, start, end)
  // Written by hand: Writer.uvarint would grow the buffer from `start` and lose the value.
  let at = start
  let rest = len
  while (rest > 0x7f) {
    buf[at++] = (rest & 0x7f) | 0x80
    rest >>>= 7
  }
  buf[at] = rest
  w.pos = end + n
}

/** Unknown tagged fields in tag order (a copy only when needed), rejecting duplicates. */
export function sortTagged(fields: TaggedField[]): TaggedField[] {
  let sorted = true
  for (let i = 1; i < fields.length; i++) {
    if (fields[i]!.tag <= fields[i - 1]!.tag) {
      sorted = false
      break
    }
  }
  const s = sorted ? fields : [...fields].sort((a, b) => a.tag - b.tag)
  for (let i = 1; i < s.length; i++) {
    if (s[i]!.tag === s[i - 1]!.tag) throw new EncodeError(`tagged field ${s[i]!.tag} appears twice`)
  }
  return s
}

/**
 * Writes the unknown tagged fields that sort before `tag` and returns the index of the next
 * one. When the known field `tag` is about to be written too, an unknown field with the same
 * tag would make the section unreadable, so it is refused.
 */
export function writeUnknownBelow(w: Writer, s: TaggedField[], k: number, tag: number, known: boolean): number {
  while (k < s.length && s[k]!.tag < tag) {
    const f = s[k++]!
    w.uvarint(f.tag)
    w.uvarint(f.data.length)
    w.raw(f.data)
  }
  if (known && k < s.length && s[k]!.tag === tag) {
    throw new EncodeError(`unknown tagged field ${tag} collides with a known field`)
  }
  return k
}

/** The field count of a tagged section; each field takes at least two bytes. */
export function taggedCount(r: Reader): number {
  const at = r.pos
  const n = r.uvarint()
  if (n > r.remaining) throw new DecodeError(`tagged field count ${n} cannot fit`, at, n, r.remaining)
  return n
}

/** Checks tag order, reads the field size and returns where the field ends. */
export function taggedFieldEnd(r: Reader, tag: number, last: number): number {
  if (tag <= last) throw new DecodeError(`tagged fields out of order (tag ${tag} after ${last})`, r.pos)
  const size = r.uvarint()
  r.need(size, `tagged field ${tag}`)
  return r.pos + size
}

/** An unknown tagged field, copied so it does not pin the whole input buffer. */
export function rawTagged(r: Reader, tag: number, end: number): TaggedField {
  return { tag, data: Buffer.from(r.buf.subarray(r.pos, end)) }
}

// --- API definitions -----------------------------------------------------------------------

type WriteFn<T> = (w: Writer, m: T, v: number) => void
type ReadFn<T> = (r: Reader, v: number) => T

/**
 * Builds an API's four entry points around its generated readers and writers, so that every
 * API checks versions and wraps failures the same way: an unsupported version is refused
 * before any byte is touched, a failed encode leaves the writer where it started, and only
 * tidelog errors leave the codec.
 */
export function defineApi<Req, Res>(d: {
  apiKey: number
  name: string
  minVersion: number
  maxVersion: number
  firstFlexibleVersion: number
  request: readonly [name: string, write: WriteFn<Req>, read: ReadFn<Req>]
  response: readonly [name: string, write: WriteFn<Res>, read: ReadFn<Res>]
}): ApiDefinition<Req, Res> {
  const { apiKey, name, minVersion: lo, maxVersion: hi } = d
  const check = (version: number): void => {
    if (!(Number.isInteger(version) && version >= lo && version <= hi)) throw unsupportedVersion(name, apiKey, version)
  }
  const encoder = <T>([what, write]: readonly [string, WriteFn<T>, ReadFn<T>]) =>
    (w: Writer, msg: T, version: number): void => {
      check(version)
      const start = w.pos
      try {
        write(w, msg, version)
      } catch (e) {
        w.pos = start
        throw encodeFailure(e, what, version)
      }
    }
  const decoder = <T>([what, , read]: readonly [string, WriteFn<T>, ReadFn<T>]) =>
    (r: Reader, version: number): T => {
      check(version)
      try {
        return read(r, version)
      } catch (e) {
        throw decodeFailure(e, r, what)
      }
    }
  return {
    apiKey,
    name,
    minVersion: lo,
    maxVersion: hi,
    firstFlexibleVersion: d.firstFlexibleVersion,
    encodeRequest: encoder(d.request),
    decodeRequest: decoder(d.request),
    encodeResponse: encoder(d.response),
    decodeResponse: decoder(d.response),
  }
}
