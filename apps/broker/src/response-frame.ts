import { ApiKeys, UnsupportedVersionError, Writer, getApi, responseHeaderVersion } from '@tidelog/protocol'

// Record sets smaller than this are cheaper to copy than to hand to the socket as a chunk of their own.
const SPLICE_MIN_BYTES = 4096

/**
 * A Writer that does not copy large byte fields: after writing a field's
 * length prefix it closes the current chunk and keeps the caller's buffer as
 * the next one, then continues in the rest of its own buffer. Only used for
 * the Fetch response, whose one bytes field (records) sits outside any tagged
 * field or reserved length, so no earlier position is patched after a cut.
 */
class ChunkWriter extends Writer {
  readonly chunks: Buffer[] = []

  override nullableBytes(b: Uint8Array | null | undefined): this {
    if (b == null || b.length < SPLICE_MIN_BYTES) return super.nullableBytes(b)
    this.int32(b.length)
    return this.splice(b)
  }

  override compactNullableBytes(b: Uint8Array | null | undefined): this {
    if (b == null || b.length < SPLICE_MIN_BYTES) return super.compactNullableBytes(b)
    this.uvarint(b.length + 1)
    return this.splice(b)
  }

  private splice(b: Uint8Array): this {
    this.chunks.push(this.buf.subarray(0, this.pos))
    this.chunks.push(Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength))
    // Carry on in the unused tail (what was written stays untouched in the chunk above),
    // or in a new buffer when little is left: Writer grows by doubling, never from nothing.
    this.buf = this.buf.length - this.pos >= 256 ? this.buf.subarray(this.pos) : Buffer.allocUnsafe(1024)
    this.pos = 0
    return this
  }

  /** Every chunk, with the frame's size prefix filled in. */
  frame(): Buffer[] {
    if (this.pos > 0 || this.chunks.length === 0) this.chunks.push(this.buf.subarray(0, this.pos))
    let size = -4
    for (const c of this.chunks) size += c.length
    this.chunks[0]!.writeInt32BE(size, 0)
    return this.chunks
  }
}

/**
 * A size-prefixed response frame as chunks to write in order. A Fetch
 * response's stored batches go out as their own chunks, as read from the
 * segment, instead of being copied into the frame (once, plus each time the
 * frame's buffer grows); every other response is one buffer.
 */
export function encodeResponseChunks(apiKey: number, apiVersion: number, correlationId: number, body: unknown): Buffer[] {
  const api = getApi(apiKey)
  if (api === undefined) throw new UnsupportedVersionError(`api ${apiKey}`, apiKey, apiVersion)
  const w = apiKey === ApiKeys.Fetch ? new ChunkWriter(1024) : new Writer(512)
  const at = w.reserveInt32()
  w.int32(correlationId)
  if (responseHeaderVersion(apiKey, apiVersion) === 1) w.uvarint(0)
  api.encodeResponse(w, body, apiVersion)
  if (w instanceof ChunkWriter) return w.frame()
  w.patchInt32(at, w.pos - at - 4)
  return [w.finish()]
}
