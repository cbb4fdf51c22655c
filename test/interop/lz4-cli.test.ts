/**
 * Our LZ4 frames (the format Kafka's lz4 codec uses) against the reference implementation, the
 * `lz4` CLI (Debian's, installed by test/helpers/install-peers.sh, which `npm run test:interop`
 * runs first): the CLI decodes what lz4FrameCompress writes, and lz4FrameDecompress reads what
 * the CLI writes with each frame option Kafka's Java and librdkafka writers may set. Under
 * CI=true a missing CLI is a failure, not a skip.
 */
import { execFile } from 'node:child_process'
import { beforeAll, describe, expect, it } from 'vitest'
import { encodeRecordBatch } from '@tidelog/protocol'
import { lz4FrameCompress, lz4FrameDecompress } from '../../packages/protocol/src/records/codecs/lz4.js'
import { peerUnavailable } from '../helpers/kafka.js'
import { cliVersion, recordsPeers } from '../helpers/peers.js'

const MiB = 1024 * 1024

function lz4(args: string[], input: Uint8Array): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = execFile('lz4', [...args, '-c', '-q'], { encoding: 'buffer', maxBuffer: 64 * MiB }, (err, stdout) =>
      err ? reject(err) : resolve(stdout),
    )
    child.stdin!.end(input)
  })
}

/** xorshift32, so a failure replays. */
function rng(seed: number) {
  let s = seed | 0 || 1
  return () => {
    s ^= s << 13
    s ^= s >>> 17
    s ^= s << 5
    return s >>> 0
  }
}

function inputs(): [string, Buffer][] {
  const next = rng(0x1234)
  const words = 'alpha beta gamma delta order payment checkout shipped failed retry session user cart'.split(' ')
  const text = (n: number) => {
    let s = ''
    while (s.length < n) s += `${words[next() % words.length]} ${next() % 1000} `
    return Buffer.from(s.slice(0, n))
  }
  const random = (n: number) => Buffer.from(Array.from({ length: n }, () => next() & 0xff))
  const records = Array.from({ length: 1000 }, (_, i) => ({ key: `k${i}`, value: `value ${i} ${'x'.repeat(i % 40)}` }))
  return [
    ['empty', Buffer.alloc(0)],
    ['one byte', Buffer.from('x')],
    ['incompressible, 200 KiB', random(200 * 1024)],
    ['a run, 300 KiB', Buffer.alloc(300 * 1024, 0x41)],
    ['text across many 64 KiB blocks, 1 MiB', text(MiB)],
    ['a 1,000-record batch body', Buffer.from(encodeRecordBatch({ records }).subarray(61))],
    ['mixed, 3 MiB', Buffer.concat([text(MiB), random(MiB), text(MiB)])],
  ]
}

describe('the lz4 CLI and our LZ4 frames', () => {
  let version: string | undefined
  let skip: string | undefined
  recordsPeers(() => (version ? [{ peer: 'lz4 CLI', version }] : undefined))
  beforeAll(() => {
    try {
      version = cliVersion('lz4')
    } catch (e) {
      skip = peerUnavailable('lz4 CLI', e) as string
    }
  })

  for (const [name, data] of inputs()) {
    it(`${name}: the CLI decodes lz4FrameCompress`, async (ctx) => {
      if (skip) return ctx.skip()
      const out = await lz4(['-d'], lz4FrameCompress(data))
      expect(out.length).toBe(data.length)
      expect(out.equals(data)).toBe(true)
    })
  }

  // Frame options: block size (-B4..-B7), linked blocks (-BD), block checksums (-BX),
  // content size (--content-size), no content checksum (--no-frame-crc), levels 1 and 9 (HC).
  const options = [['-1'], ['-9'], ['-B4'], ['-B7', '-BD'], ['-BX'], ['--content-size'], ['--no-frame-crc'], ['-B5', '-BD', '-BX', '--content-size']]
  for (const opts of options) {
    it(`lz4FrameDecompress reads lz4 ${opts.join(' ')}`, async (ctx) => {
      if (skip) return ctx.skip()
      for (const [name, data] of inputs()) {
        const frame = await lz4(opts, data)
        const out = Buffer.from(lz4FrameDecompress(frame, data.length + 1))
        expect(out.equals(data), name).toBe(true)
      }
    })
  }
})
