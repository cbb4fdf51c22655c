/**
 * The `tidelog` command line (packages/cli) against Apache Kafka 4.4, checked against what
 * Kafka's own tools say about the same state on the same broker (issue 18):
 *
 * - topics create / alter / describe / delete: `tidelog topics describe` prints what
 *   kafka-topics.sh --describe prints (TopicCommand; its ELR columns aside, KIP-966);
 * - produce with keys and headers (line and JSON modes), consume with --json and --format:
 *   the same records, offsets, timestamps and headers kafka-console-consumer.sh prints;
 * - groups describe (offsets, log end, lag) and reset-offsets --dry-run / --execute: the same
 *   rows kafka-consumer-groups.sh --describe and --reset-offsets --dry-run print;
 * - a missing topic: exit code 1 and UNKNOWN_TOPIC_OR_PARTITION, where kafka-topics.sh exits 1 too.
 *
 * One Kafka for the file; the Java tools run in parallel wherever they only read (CI budget).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ensureBuilt, tidelog, type Result } from '../../packages/cli/test/helpers.js'
import { KAFKA_VERSIONS, peerUnavailable, spawnJavaTool, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { kafkaUse, recordsPeers } from '../helpers/peers.js'

const version = KAFKA_VERSIONS.latest
const TOPICS = 'org.apache.kafka.tools.TopicCommand'
const GROUPS = 'org.apache.kafka.tools.consumer.group.ConsumerGroupCommand'
const CONSOLE_CONSUMER = 'org.apache.kafka.tools.consumer.ConsoleConsumer'

let kafka: KafkaNode | undefined
let skip: string | undefined

/**
 * A Kafka tool's exit code and output (a failing run is an answer to compare, not an exception).
 * spawnJavaTool's JVM settings (C1 only, a small heap) start these short tools about a second sooner.
 */
async function kafkaTool(main: string, args: string[]): Promise<{ code: number | null; out: string }> {
  const child = await spawnJavaTool(main, ['--bootstrap-server', kafka!.bootstrap, ...args], { version })
  child.stdin!.end()
  let out = ''
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d))
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d))
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000)
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
  clearTimeout(timer)
  return { code, out }
}

async function cli(args: string[], input?: string): Promise<Result> {
  return tidelog([...args, '-b', kafka!.bootstrap], { input })
}

async function ok(args: string[], input?: string): Promise<string> {
  const r = await cli(args, input)
  if (r.code !== 0) throw new Error(`tidelog ${args.join(' ')} exited ${r.code}: ${r.stderr}`)
  return r.stdout
}

/** Output lines that carry an answer (no JVM or log noise), trailing blanks trimmed. */
function lines(out: string): string[] {
  return out
    .split('\n')
    .map((l) => l.replace(/\s+$/, ''))
    .filter((l) => l !== '' && !/^\[\d{4}-|^WARNING|^SLF4J|^\s+at /.test(l))
}

/** A table (header row, then rows) as whitespace-split cells, rows sorted: the tools pad columns to their own widths. */
function cells(out: string): string[][] {
  const rows = lines(out).filter((l) => !/has no active members/.test(l)).map((l) => l.trim().split(/\s+/))
  return [rows[0]!, ...rows.slice(1).sort((a, b) => a.join(' ').localeCompare(b.join(' ')))]
}

async function until<T>(what: string, probe: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await probe()
    if (done(v)) return v
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

interface Rec {
  partition: number
  offset: string
  timestamp: string
  headers: [string, string][]
  key: string | null
  value: string
}

/**
 * kafka-console-consumer.sh's DefaultMessageFormatter line with print.timestamp, partition,
 * offset, headers and key on, fields separated by a tab: "CreateTime:T Partition:P Offset:O
 * h1:v1,h2:v2|NO_HEADERS key value".
 */
function parseConsoleLine(l: string): Rec {
  const [ts, part, off, hdrs, key, ...value] = l.split('\t')
  return {
    timestamp: ts!.replace(/^CreateTime:/, ''),
    partition: Number(part!.replace(/^Partition:/, '')),
    offset: off!.replace(/^Offset:/, ''),
    headers: hdrs === 'NO_HEADERS' ? [] : hdrs!.split(',').map((h) => h.split(':') as [string, string]),
    key: key === 'null' ? null : key!,
    value: value.join('\t'),
  }
}

const byPosition = (a: Rec, b: Rec) => a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset))

describe(`the tidelog CLI on Apache Kafka ${version}, next to Kafka's own tools`, () => {
  recordsPeers(() => kafkaUse(kafka))

  beforeAll(async () => {
    ensureBuilt()
    try {
      kafka = await startKafka({ version })
    } catch (e) {
      skip = peerUnavailable(`Apache Kafka ${version}`, e) as string
    }
  })
  afterAll(async () => {
    await kafka?.stop()
  })

  it('topics create, alter and describe print what kafka-topics.sh --describe prints; delete removes the topic', async (ctx) => {
    if (skip) return ctx.skip(skip)
    const topic = 'cli-topics'
    expect(await ok(['topics', 'create', topic, '--partitions', '2', '-c', 'retention.ms=3600000', '-c', 'segment.bytes=1048576'])).toBe(`Created topic ${topic}.\n`)
    expect(await ok(['topics', 'alter', topic, '--partitions', '3', '-c', 'max.message.bytes=2000000', '--delete-config', 'retention.ms'])).toBe(`Altered topic ${topic}.\n`)
    // Added partitions reach the broker's metadata a moment after CreatePartitions answers.
    const ours = await until('three partitions described', () => ok(['topics', 'describe', topic]), (o) => o.includes('PartitionCount: 3'))
    const theirs = await kafkaTool(TOPICS, ['--describe', '--topic', topic])
    expect(theirs.code).toBe(0)
    // TopicCommand adds KIP-966's ELR columns, which Admin's describeTopics does not carry.
    expect(lines(ours)).toEqual(lines(theirs.out).map((l) => l.replace(/\tElr: .*$/, '')))
    expect(ours).toMatch(/Configs: .*max\.message\.bytes=2000000/)
    expect(ours).toMatch(/Configs: .*segment\.bytes=1048576/)
    expect(ours).not.toMatch(/retention\.ms=/)
    expect(lines(ours)).toHaveLength(4)

    expect(await ok(['topics', 'list'])).toContain(`${topic}\n`)
    expect(await ok(['topics', 'delete', topic])).toBe(`Deleted topic ${topic}.\n`)
    await until('the topic gone from the listing', () => ok(['topics', 'list']), (o) => !o.split('\n').includes(topic))
  })

  it('a missing topic: exit code 1 with UNKNOWN_TOPIC_OR_PARTITION, as kafka-topics.sh exits 1; --if-exists succeeds', async (ctx) => {
    if (skip) return ctx.skip(skip)
    const missing = 'cli-no-such-topic'
    const [theirs, describeIt, deleteIt, alterIt, ifExists] = await Promise.all([
      kafkaTool(TOPICS, ['--describe', '--topic', missing]),
      cli(['topics', 'describe', missing]),
      cli(['topics', 'delete', missing]),
      cli(['topics', 'alter', missing, '--partitions', '4']),
      cli(['topics', 'delete', missing, '--if-exists']),
    ])
    expect(theirs.code).toBe(1)
    expect(theirs.out).toContain(`Topic '${missing}' does not exist as expected`)
    for (const r of [describeIt, deleteIt, alterIt]) {
      expect(r.code).toBe(1)
      expect(r.stdout).toBe('')
      expect(r.stderr).toMatch(new RegExp(`^tidelog: UNKNOWN_TOPIC_OR_PARTITION \\(${missing}\\).*; check the name with 'tidelog topics list'\\n$`))
    }
    expect(ifExists).toMatchObject({ code: 0, stdout: `Topic ${missing} does not exist.\n` })
  })

  it('produce (keys, headers; line and JSON modes) and consume --json / --format give the records kafka-console-consumer.sh prints; groups describe and reset-offsets agree with kafka-consumer-groups.sh', async (ctx) => {
    if (skip) return ctx.skip(skip)
    const topic = 'cli-records'
    const group = 'cli-group'
    await ok(['topics', 'create', topic, '--partitions', '2'])
    await ok(['produce', topic, '-K', ':', '-H', 'source=cli', '-H', 'run=1'], Array.from({ length: 8 }, (_, i) => `key-${i}:value ${i}`).join('\n') + '\n')
    const json = [
      { key: 'j0', value: 'to partition 1', headers: { kind: 'json', n: '0' }, partition: 1 },
      { key: null, value: 'no key', partition: 0, timestamp: 1_700_000_000_000 },
    ]
    await ok(['produce', topic, '--json'], json.map((j) => JSON.stringify(j)).join('\n') + '\n')

    // Kafka's consumer (a JVM and a group join: the slowest step) runs while ours read.
    const javaRead = kafkaTool(CONSOLE_CONSUMER, [
      '--topic', topic, '--from-beginning', '--max-messages', '10', '--timeout-ms', '60000',
      ...['print.timestamp', 'print.partition', 'print.offset', 'print.headers', 'print.key'].flatMap((p) => ['--formatter-property', `${p}=true`]),
    ])
    const [ourJson, ourFormat] = await Promise.all([
      ok(['consume', topic, '--from-beginning', '--until-end', '--json']),
      ok(['consume', topic, '--from-beginning', '--until-end', '--format', '%p/%o %k=%s [%h]\\n']),
    ])
    // A group that reads 9 of the 10 records, also while Kafka's consumer runs (a group of its own):
    // each partition holds 5, so both get a commit (the shift below needs one), and one is left.
    expect((await ok(['consume', topic, '--group', group, '--from-beginning', '--count', '9', '--format', '%o\\n'])).trim().split('\n')).toHaveLength(9)
    const javaConsumer = await javaRead
    expect(javaConsumer.code).toBe(0)
    const theirs = lines(javaConsumer.out).filter((l) => l.startsWith('CreateTime:')).map(parseConsoleLine).sort(byPosition)
    const ours: Rec[] = ourJson
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { partition: number; offset: number; ts: number; headers: (string | null)[]; key: string | null; payload: string })
      .map((j) => ({
        partition: j.partition,
        offset: String(j.offset),
        timestamp: String(j.ts),
        headers: Array.from({ length: j.headers.length / 2 }, (_, i) => [j.headers[2 * i]!, j.headers[2 * i + 1]!] as [string, string]),
        key: j.key,
        value: j.payload,
      }))
      .sort(byPosition)
    expect(theirs).toHaveLength(10)
    expect(ours).toEqual(theirs)
    // What was produced is what both read: keys, values, headers (the -H ones on every line record), the JSON record's partition and timestamp.
    expect(ours.filter((r) => r.key?.startsWith('key-')).map((r) => [r.key, r.value, r.headers]).sort()).toEqual(
      Array.from({ length: 8 }, (_, i) => [`key-${i}`, `value ${i}`, [['source', 'cli'], ['run', '1']]]).sort(),
    )
    expect(ours.find((r) => r.key === 'j0')).toMatchObject({ partition: 1, value: 'to partition 1', headers: [['kind', 'json'], ['n', '0']] })
    expect(ours.find((r) => r.key === null)).toMatchObject({ partition: 0, value: 'no key', timestamp: '1700000000000' })
    expect(ourFormat.trim().split('\n').sort()).toEqual(
      ours.map((r) => `${r.partition}/${r.offset} ${r.key ?? ''}=${r.value} [${r.headers.map(([k, v]) => `${k}=${v}`).join(',')}]`).sort(),
    )

    // The group's offsets, the log ends and the lag per partition.
    // The consumer's LeaveGroup is sent as it closes; describe once the group is Empty.
    await until('the group empty', () => ok(['groups', 'describe', group, '--state']), (o) => /\bEmpty\b/.test(o))
    const describeBoth = () => Promise.all([ok(['groups', 'describe', group]), kafkaTool(GROUPS, ['--describe', '--group', group])])
    const planArgs = ['--topic', topic, '--shift-by', '-1', '--dry-run']
    // Both only read: Kafka's describe and its dry run share one round of JVM starts.
    const [[ourDescribe, theirDescribe], ourPlan, theirPlan] = await Promise.all([
      describeBoth(),
      ok(['groups', 'reset-offsets', group, ...planArgs]),
      kafkaTool(GROUPS, ['--reset-offsets', '--group', group, ...planArgs]),
    ])
    expect(theirDescribe.code).toBe(0)
    expect(cells(ourDescribe)).toEqual(cells(theirDescribe.out))
    const rows = cells(ourDescribe).slice(1)
    expect(rows.map((r) => r.slice(0, 3))).toEqual([[group, topic, '0'], [group, topic, '1']])
    // Nine records read, ten in the log: the committed offsets add up to 9, lag is end minus offset.
    expect(rows.reduce((n, r) => n + Number(r[3]), 0)).toBe(9)
    expect(rows.reduce((n, r) => n + Number(r[4]), 0)).toBe(10)
    for (const r of rows) expect(Number(r[5])).toBe(Number(r[4]) - Number(r[3]))
    expect(ourDescribe).toContain(`Consumer group '${group}' has no active members.`)

    // reset-offsets --dry-run: the same plan as Kafka's tool, and nothing moved; --execute moves it.
    expect(theirPlan.code).toBe(0)
    expect(cells(ourPlan)).toEqual(cells(theirPlan.out))
    expect(cells(ourPlan).slice(1).map((r) => r[3])).toEqual(rows.map((r) => String(Math.max(0, Number(r[3]) - 1))))
    expect(cells(await ok(['groups', 'describe', group]))).toEqual(cells(ourDescribe))
    const executed = await ok(['groups', 'reset-offsets', group, '--topic', `${topic}:1`, '--to-offset', '2', '--execute'])
    expect(cells(executed)).toEqual([['GROUP', 'TOPIC', 'PARTITION', 'NEW-OFFSET'], [group, topic, '1', '2']])
    const [afterOurs, afterTheirs] = await describeBoth()
    expect(afterTheirs.code).toBe(0)
    expect(cells(afterOurs)).toEqual(cells(afterTheirs.out))
    const p1 = cells(afterOurs).find((r) => r[2] === '1')!
    expect([p1[3], p1[5]]).toEqual(['2', String(Number(p1[4]) - 2)])
    expect(cells(afterOurs).find((r) => r[2] === '0')).toEqual(rows[0])
  })
})
