/**
 * Our pure-JS zstd frames through the reference decoder, the `zstd` CLI (Debian's, installed by
 * test/helpers/install-peers.sh). The unit tests run the same check when the binary happens to be
 * there; here, under CI=true, a missing CLI is a failure rather than a skip.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { beforeAll, describe, expect, it } from 'vitest'
import { encodeRecordBatch } from '@tidelog/protocol'
import { zstdCompress } from '../../packages/protocol/src/records/codecs/zstd-compress.js'
import { peerUnavailable } from '../helpers/kafka.js'

const run = promisify(execFile)
const MiB = 1024 * 1024

function decodeWithCli(frame: Uint8Array): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = execFile('zstd', ['-d', '-c', '-q'], { encoding: 'buffer', maxBuffer: 64 * MiB }, (err, stdout) =>
      err ? reject(err) : resolve(stdout),
    )
    child.stdin!.end(frame)
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

describe('the zstd CLI decodes frames from zstdCompress', () => {
  let skip: string | undefined
  beforeAll(async () => {
    try {
      await run('zstd', ['--version'])
    } catch (e) {
      skip = peerUnavailable('zstd CLI', e) as string
    }
  })

  for (const [name, data] of inputs()) {
    it(`${name}, at several levels`, async (ctx) => {
      if (skip) return ctx.skip()
      for (const level of [-1, 1, 3, 4]) {
        const out = await decodeWithCli(zstdCompress(data, level))
        expect(out.length).toBe(data.length)
        expect(out.equals(data)).toBe(true)
      }
    })
  }
})
