import { FrameTooLargeError } from './errors/base.js'

/** Kafka's socket.request.max.bytes default (100 MiB). */
export const DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024

export interface FrameDecoderOptions {
  /** Largest accepted frame body (the int32 prefix not counted). Default 100 MiB. */
  maxFrameBytes?: number
}

// A frame spanning chunks is kept as a list of views into the chunks and copied
// once, into a buffer of exactly its size, when its last byte arrives. Memory
// therefore grows only with bytes actually received: a peer announcing 100 MiB
// and then sending 5 bytes costs 5 bytes, not 100 MiB (Kafka allocates up
// front and bounds the total with queued.max.request.bytes instead).
//
// Pieces smaller than SMALL_PIECE are copied into a staging buffer instead of
// referenced: a peer trickling one byte per TCP segment would otherwise make us
// hold one Buffer object (~100 bytes of heap) per byte received.
const SMALL_PIECE = 1024
const STAGE_BYTES = 16 * 1024

const EMPTY = Buffer.alloc(0)

/**
 * Reassembles int32-length-prefixed frames (Kafka's request and response framing)
 * from arbitrary chunk splits.
 *
 * A frame lying wholly inside one chunk is returned as a view into that chunk (no
 * copy), so chunks handed to `push` must not be reused by the caller afterwards;
 * sockets hand out fresh buffers, so this holds for `socket.on('data')`.
 */
export class FrameDecoder {
  readonly maxFrameBytes: number

  // The length prefix, when it is itself split across chunks.
  private readonly header = Buffer.alloc(4)
  private headerFill = 0
  // Body size of the frame in progress, or -1 while reading a length prefix.
  private size = -1
  private got = 0
  private parts: Buffer[] = []
  private stage: Buffer = EMPTY
  private stageFill = 0
  private failure: FrameTooLargeError | undefined

  constructor(options: FrameDecoderOptions = {}) {
    const max = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES
    if (!Number.isInteger(max) || max < 0 || max > 0x7fffffff) {
      throw new RangeError(`maxFrameBytes must be an integer in [0, 2147483647], got ${max}`)
    }
    this.maxFrameBytes = max
  }

  /** Bytes received that belong to a frame not yet complete (length prefix included). */
  get pending(): number {
    return this.size < 0 ? this.headerFill : 4 + this.got
  }

  /** Forget any partial frame (and a previous failure), e.g. after a reconnect. */
  reset(): void {
    this.headerFill = 0
    this.size = -1
    this.got = 0
    this.parts = []
    this.stage = EMPTY
    this.stageFill = 0
    this.failure = undefined
  }

  /**
   * Feed one chunk; returns the frame bodies it completed, in order (often none).
   * A negative length or one above `maxFrameBytes` throws FrameTooLargeError as
   * soon as its four bytes are seen, before anything is allocated for it. The
   * stream cannot be resynchronised after that, so every later `push` throws the
   * same error until `reset()`.
   */
  push(chunk: Uint8Array): Buffer[] {
    if (this.failure !== undefined) throw this.failure
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    const len = buf.length
    const out: Buffer[] = []
    let pos = 0
    while (pos < len) {
      let size = this.size
      if (size < 0) {
        if (this.headerFill === 0 && len - pos >= 4) {
          size = buf.readInt32BE(pos)
          pos += 4
        } else {
          const n = Math.min(4 - this.headerFill, len - pos)
          buf.copy(this.header, this.headerFill, pos, pos + n)
          this.headerFill += n
          pos += n
          if (this.headerFill < 4) break
          this.headerFill = 0
          size = this.header.readInt32BE(0)
        }
        if (size < 0 || size > this.maxFrameBytes) {
          this.failure = new FrameTooLargeError(size, this.maxFrameBytes)
          throw this.failure
        }
        if (len - pos >= size) {
          out.push(buf.subarray(pos, pos + size))
          pos += size
          continue
        }
        this.size = size
        this.got = 0
      }
      const take = Math.min(size - this.got, len - pos)
      this.append(buf, pos, take)
      pos += take
      if (this.got === size) out.push(this.complete())
    }
    return out
  }

  private append(buf: Buffer, pos: number, n: number): void {
    const room = this.stage.length - this.stageFill
    if (n <= room) {
      buf.copy(this.stage, this.stageFill, pos, pos + n)
      this.stageFill += n
    } else {
      this.flushStage()
      if (n < SMALL_PIECE) {
        // Sized to what the frame still lacks, so a small frame that spans two
        // chunks is assembled in place and this buffer becomes the frame itself.
        this.stage = Buffer.allocUnsafe(Math.min(STAGE_BYTES, this.size - this.got))
        buf.copy(this.stage, 0, pos, pos + n)
        this.stageFill = n
      } else {
        this.parts.push(buf.subarray(pos, pos + n))
      }
    }
    this.got += n
  }

  private flushStage(): void {
    if (this.stageFill > 0) this.parts.push(this.stage.subarray(0, this.stageFill))
    this.stage = EMPTY
    this.stageFill = 0
  }

  private complete(): Buffer {
    this.flushStage()
    const parts = this.parts
    const size = this.size
    let frame: Buffer
    if (parts.length === 1 && parts[0]!.length === size) {
      frame = parts[0]!
    } else {
      frame = Buffer.allocUnsafe(size)
      let at = 0
      for (let i = 0; i < parts.length; i++) {
        const p = parts[i]!
        p.copy(frame, at)
        at += p.length
      }
    }
    this.parts = []
    this.size = -1
    this.got = 0
    return frame
  }
}
