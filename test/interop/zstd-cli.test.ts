/**
 * Our pure-JS zstd frames through the reference decoder, the `zstd` CLI (Debian's, installed by
 * test/helpers/install-peers.sh), and the CLI's frames through our decoder. The unit tests run
 * the first check when the binary happens to be there; here, under CI=true, a missing CLI is a
 * failure rather than a skip.
 */
import { execFile } from 'node:child_process'
import { beforeAll, describe, expect, it } from 'vitest'
import { encodeRecordBatch } from '@tidelog/protocol'
import { zstdCompress } from '../../packages/protocol/src/records/codecs/zstd-compress.js'
import { zstdDecompress } from '../../packages/protocol/src/records/codecs/zstd.js'
import { peerUnavailable } from '../helpers/kafka.js'
import { cliVersion, recordsPeers } from '../helpers/peers.js'

const MiB = 1024 * 1024

function zstdCli(args: string[], input: Uint8Array): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = execFile('zstd', [...args, '-c', '-q'], { encoding: 'buffer', maxBuffer: 64 * MiB }, (err, stdout) =>
      err ? reject(err) : resolve(stdout),
    )
    child.stdin!.end(input)
  })
}
const decodeWithCli = (frame: Uint8Array) => zstdCli(['-d'], frame)

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

const WORDS = 'alpha beta gamma delta order payment checkout shipped failed retry session user cart'.split(' ')

function inputs(): [string, Buffer][] {
  const next = rng(7)
  const random = (n: number) => Buffer.from(Array.from({ length: n }, () => next() & 0xff))
  const text = (n: number) => {
    let s = ''
    while (s.length < n) s += `${next() % 100_000} ${WORDS[next() % WORDS.length]} ${WORDS[next() % WORDS.length]}\n`
    return Buffer.from(s.slice(0, n))
  }
  const records = Array.from({ length: 1000 }, (_, i) => ({
    key: `user-${String(next() % 100_000).padStart(5, '0')}`,
    value: text(100),
    timestamp: BigInt(1_700_000_000_000 + i),
  }))
  return [
    ['empty', Buffer.alloc(0)],
    ['the producer probe', Buffer.from('tidelog')],
    ['random, 300 KiB', random(300 * 1024)],
    ['a run, 300 KiB', Buffer.alloc(300 * 1024, 0x41)],
    ['text, 500 KiB', text(500 * 1024)],
    ['a 1,000-record batch body', encodeRecordBatch({ records }).subarray(61)],
    ['mixed, past 8 MiB (window descriptor)', Buffer.concat([text(4 * MiB), random(MiB), text(4 * MiB)])],
  ]
}

describe('the zstd CLI and our zstd frames', () => {
  let skip: string | undefined
  let version: string | undefined
  recordsPeers(() => (version ? [{ peer: 'zstd CLI', version }] : undefined))
  beforeAll(async () => {
    try {
      version = cliVersion('zstd')
    } catch (e) {
      skip = peerUnavailable('zstd CLI', e) as string
    }
  })

  for (const [name, data] of inputs()) {
    it(`${name}: the CLI decodes zstdCompress at several levels`, async (ctx) => {
      if (skip) return ctx.skip()
      for (const level of [-1, 1, 3, 4]) {
        const out = await decodeWithCli(zstdCompress(data, level))
        expect(out.length).toBe(data.length)
        expect(out.equals(data)).toBe(true)
      }
    })
  }

  // The reference encoder's choices (levels up to ultra, long-distance matching, no
  // checksum, a content size), read by the decoder Node 20 uses.
  // The slow high levels get the inputs up to 1 MiB only, to keep the suite's time.
  const encoders = [['-1'], ['-3'], ['-9'], ['-19'], ['--long=27', '-3'], ['--no-check'], ['--no-content-size']]
  for (const opts of encoders) {
    it(`zstdDecompress reads zstd ${opts.join(' ')}`, async (ctx) => {
      if (skip) return ctx.skip()
      for (const [name, data] of inputs()) {
        if (opts[0] === '-19' && data.length > MiB) continue
        const frame = await zstdCli(opts, data)
        const out = Buffer.from(zstdDecompress(frame, data.length + 1))
        expect(out.equals(data), name).toBe(true)
      }
    }, 120_000)
  }
})
