/**
 * `tidelog topics`, `produce` and `consume` spawned as a person runs them, with pipes,
 * against an in-process broker: output, exit codes, and bad input (one clear line on stderr).
 */
import { createServer } from 'node:net'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inProcess, testBroker, tidelog, type TestBroker } from './helpers.js'

let b: TestBroker

beforeAll(async () => {
  b = await testBroker()
})

afterAll(async () => {
  await b?.close()
})

const lines = (s: string) => s.split('\n').filter((l) => l !== '')

describe.concurrent('tidelog topics', () => {
  it('creates, lists, describes, alters and deletes topics as kafka-topics.sh prints them', async () => {
    expect(await b.run(['topics', 'create', 'orders', '--partitions', '3', '--config', 'retention.ms=3600000'])).toMatchObject({ code: 0, stdout: 'Created topic orders.\n' })
    expect((await b.run(['topics', 'list'])).stdout.split('\n')).toContain('orders')

    const d = await b.run(['topics', 'describe', 'orders'])
    expect(d.code).toBe(0)
    expect(lines(d.stdout)[0]).toMatch(/^Topic: orders\tTopicId: \S+\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: retention\.ms=3600000$/)
    expect(lines(d.stdout).slice(1)).toEqual([0, 1, 2].map((p) => `\tTopic: orders\tPartition: ${p}\tLeader: 1\tReplicas: 1\tIsr: 1`))

    expect(await b.run(['topics', 'alter', 'orders', '--partitions', '5', '--config', 'max.message.bytes=2000000', '--delete-config', 'retention.ms'])).toMatchObject({ code: 0, stdout: 'Altered topic orders.\n' })
    const json = JSON.parse((await b.call(['topics', 'describe', 'orders', '--json'])).stdout) as { partitions: unknown[]; configs: Record<string, string> }[]
    expect(json[0]!.partitions).toHaveLength(5)
    expect(json[0]!.configs).toEqual({ 'max.message.bytes': '2000000' })

    const again = await b.run(['topics', 'create', 'orders'])
    expect(again.code).toBe(1)
    expect(again.stderr).toMatch(/^tidelog: TOPIC_ALREADY_EXISTS \(orders\).*--if-not-exists\n$/)
    expect(await b.call(['topics', 'create', 'orders', '--if-not-exists'])).toMatchObject({ code: 0, stdout: 'Topic orders already exists.\n' })

    const shrink = await b.call(['topics', 'alter', 'orders', '--partitions', '2'])
    expect(shrink.code).toBe(1)
    expect(shrink.stderr).toMatch(/^tidelog: INVALID_PARTITIONS \(orders\)/)

    expect(await b.run(['topics', 'delete', 'orders'])).toMatchObject({ code: 0, stdout: 'Deleted topic orders.\n' })
    const gone = await b.run(['topics', 'describe', 'orders'])
    expect(gone.code).toBe(1)
    expect(gone.stderr).toBe("tidelog: UNKNOWN_TOPIC_OR_PARTITION (orders); check the name with 'tidelog topics list'\n")
    expect(await b.call(['topics', 'delete', 'orders', '--if-exists'])).toMatchObject({ code: 0, stdout: 'Topic orders does not exist.\n' })
  })
})

describe.concurrent('tidelog produce and consume', () => {
  beforeAll(async () => {
    for (const t of ['lines', 'json', 'raw', 'codec']) expect((await b.run(['topics', 'create', t, '--partitions', '2'])).code).toBe(0)
  })

  it('line mode with --key-separator, headers and --partition; consume prints a kcat --format to the end', async () => {
    const p = await b.run(['produce', 'lines', '-K', ':', '-H', 'src=cli', '-H', 'run=1'], { input: 'k1:v1\nk2:v2:with colon\n:no key\n' })
    expect(p).toMatchObject({ code: 0, stdout: '', stderr: '' })
    expect((await b.run(['produce', 'lines', '--partition', '1'], { input: 'plain\r\n' })).code).toBe(0)

    const c = await b.run(['consume', 'lines', '--from-beginning', '--until-end', '--format', '%t %k=%s [%h] %K %S\\n'])
    expect(c.code).toBe(0)
    expect(lines(c.stdout).sort()).toEqual(['lines =no key [src=cli,run=1] 0 6', 'lines =plain [] -1 5', 'lines k1=v1 [src=cli,run=1] 2 2', 'lines k2=v2:with colon [src=cli,run=1] 2 13'])

    // The record sent with --partition 1 is the last one there; -o -1 reads one record before each end.
    const last = await b.run(['consume', 'lines', '-p', '1', '-o', '-1', '-e', '-f', '%p %o %s\\n'])
    expect(last.stdout).toMatch(/^1 \d+ plain\n$/)
    const offset = last.stdout.split(' ')[1]!
    expect((await b.run(['consume', 'lines', '-p', '1', '--offset', offset, '-e'])).stdout).toBe('plain\n')
    // --count stops early; the default start is the end, so without --from-beginning nothing old shows.
    expect(lines((await b.run(['consume', 'lines', '--from-beginning', '--count', '2'])).stdout)).toHaveLength(2)
    expect(await b.run(['consume', 'lines', '-e'])).toMatchObject({ code: 0, stdout: '' })
  })

  it('--json round-trips key, value, headers and timestamp; consume --json prints kcat -J envelopes', async () => {
    // An hour old: older than the other two, yet well inside the broker's retention.
    const hourAgo = Date.now() - 3_600_000
    const input = [
      JSON.stringify({ key: 'user-1', value: { n: 1 }, headers: { trace: 'abc' }, timestamp: hourAgo }),
      '',
      JSON.stringify({ value: 'text', partition: 1 }),
      JSON.stringify({ key: 'gone', value: null }),
    ].join('\n')
    expect((await b.run(['produce', 'json', '--json'], { input })).code).toBe(0)
    const c = await b.run(['consume', 'json', '--from-beginning', '-e', '--json'])
    const got = lines(c.stdout).map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(got).toHaveLength(3)
    expect(got).toContainEqual(expect.objectContaining({ topic: 'json', tstype: 'create', ts: hourAgo, key: 'user-1', payload: '{"n":1}', headers: ['trace', 'abc'] }))
    expect(got).toContainEqual(expect.objectContaining({ partition: 1, key: null, payload: 'text', headers: [] }))
    expect(got).toContainEqual(expect.objectContaining({ key: 'gone', payload: null }))
    // --timestamp starts at the first record at or after the time: only the two sent just now.
    const since = new Date(hourAgo + 1_800_000).toISOString()
    expect(lines((await b.run(['consume', 'json', '--timestamp', since, '-e', '-f', '%k|%s\\n'])).stdout).sort()).toEqual(['gone|', '|text'])
  })

  it('--raw sends each file whole; --compression and --acks reach the broker and read back', async () => {
    const file = join(b.dataDir, 'blob.bin')
    const blob = Buffer.from('line one\nline two\n\u00e9\n')
    writeFileSync(file, blob)
    expect((await b.run(['produce', 'raw', '--raw', file, file])).code).toBe(0)
    const c = await b.run(['consume', 'raw', '--from-beginning', '-e', '-f', '%S:%s|'])
    expect(c.stdout).toBe(`${blob.length}:${blob.toString()}|`.repeat(2))

    // Past the producer's 1 MiB max.request.size: refused up front with what to pass instead.
    const large = join(b.dataDir, 'large.bin')
    writeFileSync(large, Buffer.alloc(1_100_000, 7))
    const refused = await b.run(['produce', 'raw', '--raw', large])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/^tidelog: RecordTooLargeError: .*; pass --max-request-size \(the topic's max\.message\.bytes must allow it too\)\n$/)
    expect((await b.call(['topics', 'alter', 'raw', '--config', 'max.message.bytes=2000000'])).code).toBe(0)
    expect((await b.run(['produce', 'raw', '--raw', large, '--max-request-size', '2000000'])).code).toBe(0)
    expect(lines((await b.run(['consume', 'raw', '-o', '-1', '-e', '-f', '%S\\n'])).stdout)).toContain('1100000')

    const many = Array.from({ length: 500 }, (_, i) => `record-${i}`).join('\n')
    for (const [codec, acks] of [['gzip', '1'], ['lz4', 'all'], ['zstd', '0']] as const) {
      expect((await b.run(['produce', 'codec', '--compression', codec, '--acks', acks], { input: many })).code).toBe(0)
    }
    const missing = await b.run(['produce', 'raw', '--raw', file, join(b.dataDir, 'missing.bin')])
    expect(missing).toMatchObject({ code: 1, stderr: `tidelog: cannot read ${join(b.dataDir, 'missing.bin')}: ENOENT\n` })
    expect(lines((await b.run(['consume', 'raw', '--from-beginning', '-e', '-f', '%o\\n'])).stdout)).toHaveLength(3)

    const back = lines((await b.run(['consume', 'codec', '--from-beginning', '-e'])).stdout)
    expect(back).toHaveLength(1500)
    expect(new Set(back)).toEqual(new Set(many.split('\n')))
  })
})

describe.concurrent('bad input: one line on stderr, a documented exit code', () => {
  it('usage errors exit 2', async () => {
    const spawned = await b.run(['consume', 'lines', '--bogus'])
    expect(spawned).toMatchObject({ code: 2, stdout: '', stderr: "tidelog: unknown option --bogus (see 'tidelog --help')\n" })
    // The same run() in-process for the rest: bin.ts only turns its result into the exit code.
    for (const args of [['frobnicate'], ['topics'], ['produce'], ['produce', 'lines', '--acks', '2'], ['consume', 'lines', '--count', 'x'], ['produce', 'lines', '--json', '--raw'], ['consume', 'lines', '--offset'], ['topics', 'create', 't', '--partitions', '0']]) {
      const r = await inProcess([...args, '-b', b.bootstrap])
      expect(r.code, args.join(' ')).toBe(2)
      expect(r.stderr, args.join(' ')).toMatch(/^tidelog: [^\n]+\(see 'tidelog --help'\)\n$/)
    }
    expect((await tidelog(['--help'])).stdout).toContain('Exit codes: 0 ok, 1 the operation failed, 2 bad command line, 3 no broker reachable')
    expect((await tidelog(['consume', '--help'])).stdout).toContain('--until-end')
  })

  it('an unknown topic fails produce and consume with its Kafka error name and exit 1', async () => {
    for (const args of [['consume', 'nope', '-e'], ['produce', 'nope']]) {
      const r = await b.run(args, { input: 'x\n' })
      expect(r).toMatchObject({ code: 1, stdout: '', stderr: "tidelog: UNKNOWN_TOPIC_OR_PARTITION (nope); check the name with 'tidelog topics list'\n" })
    }
    expect((await b.run(['topics', 'list'])).stdout.split('\n')).not.toContain('nope')
  })

  it('a bad line stops produce after delivering the lines before it, and says which line', async () => {
    expect((await b.run(['topics', 'create', 'partial'])).code).toBe(0)
    const r = await b.run(['produce', 'partial', '--key-separator', '='], { input: 'a=1\nb=2\nno separator\nc=3\n' })
    expect(r).toMatchObject({ code: 1, stderr: 'tidelog: stdin line 3: no key separator "=" found; the 2 records before it were written\n' })
    const j = await b.run(['produce', 'partial', '--json'], { input: '{"value":"ok"}\n{"value": oops}\n' })
    expect(j.code).toBe(1)
    expect(j.stderr).toMatch(/^tidelog: stdin line 2: not JSON \(.*\); the 1 records before it were written\n$/)
    expect(lines((await b.run(['consume', 'partial', '--from-beginning', '-e', '-f', '%k%s\\n'])).stdout)).toEqual(['a1', 'b2', 'ok'])
  })

  it('a broker that is down: exit 3 with what to do', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port
        s.close(() => resolve(p))
      })
    })
    const r = await tidelog(['topics', 'list', '--bootstrap-server', `127.0.0.1:${port}`, '--timeout', '1500'])
    expect(r.code).toBe(3)
    expect(r.stderr).toMatch(new RegExp(`^tidelog: cannot reach a broker at 127\\.0\\.0\\.1:${port} \\(.*ECONNREFUSED.*\\); is it running\\? Pass --bootstrap-server host:port or set TIDELOG_BOOTSTRAP_SERVER\\n$`))
  })
})
