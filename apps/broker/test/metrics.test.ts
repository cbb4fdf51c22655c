import { writeFileSync } from 'node:fs'
import { ApiKeys, ErrorCodes, ZERO_UUID } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { type Broker, type BrokerOptions, parseConfig, startBroker } from '../src/index.js'
import { makeBatch } from './helpers/batches.js'
import { connectTracked, trackOpened } from './helpers/opened.js'
import type { RawClient } from './helpers/raw-client.js'
import { RawClient as Raw } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'
import { until } from './helpers/until.js'
import { login } from './security/helpers.js'

// /metrics over HTTP, parsed as strictly as the Prometheus text format (0.0.4) allows:
// any line a scraper would reject fails the test.

const open = trackOpened()

async function start(opts: BrokerOptions = {}) {
  const b = await startBroker({ port: 0, dataDir: tempDir(), consolePort: 0, numPartitions: 2, ...opts })
  open.brokers.push(b)
  return b
}

interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

interface Family {
  type: string
  help: string
  samples: Sample[]
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/
const VALUE = /^(?:[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|NaN|[+-]Inf)$/

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {}
  let i = 0
  while (i < text.length) {
    const eq = text.indexOf('=', i)
    if (eq < 0) throw new Error(`label without '=': ${line}`)
    const name = text.slice(i, eq)
    if (!LABEL_NAME.test(name) || name in labels) throw new Error(`bad or repeated label name ${JSON.stringify(name)}: ${line}`)
    if (text[eq + 1] !== '"') throw new Error(`label value not quoted: ${line}`)
    let value = ''
    let j = eq + 2
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === '\n') throw new Error(`raw newline in a label value: ${line}`)
      if (text[j] === '\\') {
        const e = text[++j]
        if (e === '\\') value += '\\'
        else if (e === '"') value += '"'
        else if (e === 'n') value += '\n'
        else throw new Error(`bad escape \\${e}: ${line}`)
      } else value += text[j]
    }
    if (j >= text.length) throw new Error(`unterminated label value: ${line}`)
    labels[name] = value
    i = j + 1
    if (i < text.length) {
      if (text[i] !== ',') throw new Error(`expected ',' between labels: ${line}`)
      i++
    }
  }
  return labels
}

/** Parses exposition text, checking every rule a Prometheus scrape enforces. */
function parseExposition(text: string): Map<string, Family> {
  expect(text.endsWith('\n')).toBe(true)
  const families = new Map<string, Family>()
  const seenSeries = new Set<string>()
  let current: string | undefined
  const familyOf = (sample: string): string => {
    for (const suffix of ['_bucket', '_sum', '_count']) {
      const base = sample.slice(0, -suffix.length)
      if (sample.endsWith(suffix) && families.get(base)?.type === 'histogram') return base
    }
    return sample
  }
  for (const line of text.slice(0, -1).split('\n')) {
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line)
      if (m === null) continue
      const [, kind, name, rest] = m as unknown as [string, string, string, string]
      if (!NAME.test(name)) throw new Error(`bad metric name: ${line}`)
      let f = families.get(name)
      if (f === undefined) {
        if (current !== undefined && families.get(current)!.samples.length === 0 && current !== name && families.get(current)!.type === '') throw new Error(`HELP without TYPE for ${current}`)
        families.set(name, (f = { type: '', help: '', samples: [] }))
      } else if (f.samples.length > 0 || (kind === 'TYPE' && f.type !== '') || (kind === 'HELP' && f.help !== '')) {
        throw new Error(`family ${name} declared twice or after its samples: ${line}`)
      }
      if (kind === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) throw new Error(`bad type: ${line}`)
        f.type = rest
      } else f.help = rest
      current = name
      continue
    }
    if (line.trim() === '') throw new Error('blank line in the exposition')
    const m = /^([^{\s]+)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$/.exec(line)
    if (m === null) throw new Error(`unparseable sample line: ${JSON.stringify(line)}`)
    const [, name, labelText, value] = m as unknown as [string, string, string | undefined, string]
    if (!NAME.test(name)) throw new Error(`bad sample name: ${line}`)
    if (!VALUE.test(value)) throw new Error(`bad value: ${line}`)
    const fam = familyOf(name)
    if (fam !== current) throw new Error(`sample ${name} outside its family's block (current ${current}): ${line}`)
    const labels = labelText === undefined ? {} : parseLabels(labelText, line)
    const key = `${name}{${Object.entries(labels).sort().map(([k, v]) => `${k}=${v}`).join(',')}}`
    if (seenSeries.has(key)) throw new Error(`duplicate series ${key}`)
    seenSeries.add(key)
    const f = families.get(fam)!
    if (f.type === 'histogram' && name === fam) throw new Error(`bare sample of histogram ${fam}`)
    if (f.type === 'counter' && !(Number(value) >= 0)) throw new Error(`negative counter: ${line}`)
    f.samples.push({ name, labels, value: value === '+Inf' ? Infinity : value === '-Inf' ? -Infinity : Number(value) })
  }
  for (const [name, f] of families) {
    if (f.type === '') throw new Error(`family ${name} has no TYPE`)
    if (f.type !== 'histogram') continue
    // Buckets are cumulative and the +Inf bucket equals _count, per label set.
    const bySet = new Map<string, Sample[]>()
    for (const s of f.samples.filter((x) => x.name.endsWith('_bucket'))) {
      const { le, ...rest } = s.labels
      const k = JSON.stringify(rest)
      bySet.set(k, [...(bySet.get(k) ?? []), s])
      expect(le).toBeDefined()
    }
    for (const [k, buckets] of bySet) {
      for (let i = 1; i < buckets.length; i++) expect(buckets[i]!.value).toBeGreaterThanOrEqual(buckets[i - 1]!.value)
      expect(buckets.at(-1)!.labels.le).toBe('+Inf')
      const count = f.samples.find((s) => s.name === `${name}_count` && JSON.stringify(s.labels) === k)
      expect(count?.value).toBe(buckets.at(-1)!.value)
    }
  }
  return families
}

/** A scrape; `login` (user:password) for a broker with a SASL listener, whose console asks for one. */
async function scrape(b: Broker, login?: string): Promise<Map<string, Family>> {
  const res = await fetch(`${b.console!.url}metrics`, { headers: login === undefined ? {} : { authorization: `Basic ${Buffer.from(login).toString('base64')}` } })
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
  return parseExposition(await res.text())
}

function value(families: Map<string, Family>, name: string, labels: Record<string, string | number> = {}, sample = name): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => [k, String(v)])
  const f = families.get(name)
  return f?.samples.find((s) => s.name === sample && Object.keys(s.labels).length === want.length && want.every(([k, v]) => s.labels[k!] === v))?.value
}

const produceBody = (topic: string, parts: { index: number; records: Buffer }[]) => ({
  transactionalId: null,
  acks: -1,
  timeoutMs: 5000,
  topicData: [{ name: topic, partitionData: parts }],
})

const fetchBody = (topic: string, partition: number) => ({
  replicaId: -1,
  maxWaitMs: 0,
  minBytes: 1,
  maxBytes: 1 << 20,
  isolationLevel: 0,
  sessionId: 0,
  sessionEpoch: -1,
  topics: [{ topic, partitions: [{ partition, fetchOffset: 0n, partitionMaxBytes: 1 << 20, logStartOffset: -1n, currentLeaderEpoch: -1 }] }],
  forgottenTopicsData: [],
  rackId: '',
})

async function createTopic(c: RawClient, name: string): Promise<void> {
  const r = await c.request(ApiKeys.Metadata, 12, { topics: [{ name, topicId: ZERO_UUID }], allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false })
  expect(r.topics[0].errorCode).toBe(0)
}

describe('/metrics', () => {
  it('is off unless a console port is given, and --console-port parses as a port', async () => {
    const b = await start({ consolePort: undefined })
    expect(b.console).toBeUndefined()
    const parsed = parseConfig({ argv: ['--console-port', '0'], env: {} })
    expect(parsed.help === false && parsed.config.consolePort).toBe(0)
    expect(() => parseConfig({ argv: ['--console-port', '70000'], env: {} })).toThrow(/console-port/)
  })

  it('counts what was produced and fetched, per topic and in total, and reads sizes, offsets and lag from the broker', async () => {
    const b = await start()
    expect(b.console!.host).toBe('127.0.0.1')
    const c = await connectTracked(open, b)
    await createTopic(c, 'orders')
    const before = await scrape(b)
    expect(value(before, 'kafka_server_brokertopicmetrics_messagesin_total')).toBe(0)

    const p0 = makeBatch([{ key: 'k', value: 'a' }, { value: 'b' }, { value: 'c' }, { value: 'd' }, { value: 'e' }])
    const p1 = makeBatch(7)
    const ok = await c.request(ApiKeys.Produce, 9, produceBody('orders', [{ index: 0, records: p0 }, { index: 1, records: p1 }]))
    expect(ok.responses[0].partitionResponses.map((p: { errorCode: number }) => p.errorCode)).toEqual([0, 0])
    // A partition that does not exist: a failed produce, counted as such and not as bytes in.
    const bad = await c.request(ApiKeys.Produce, 9, produceBody('orders', [{ index: 9, records: makeBatch(3) }]))
    expect(bad.responses[0].partitionResponses[0].errorCode).toBe(ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION)
    const fetched = await c.request(ApiKeys.Fetch, 12, fetchBody('orders', 0))
    const fetchedBytes = fetched.responses[0].partitions[0].records.length
    expect(fetchedBytes).toBe(p0.length)
    const commit = await c.request(ApiKeys.OffsetCommit, 8, {
      groupId: 'billing',
      generationIdOrMemberEpoch: -1,
      memberId: '',
      groupInstanceId: null,
      topics: [{ name: 'orders', partitions: [{ partitionIndex: 0, committedOffset: 2n, committedLeaderEpoch: -1, committedMetadata: null }] }],
    })
    expect(commit.topics[0].partitions[0].errorCode).toBe(0)

    const m = await scrape(b)
    const topic = { topic: 'orders' }
    expect(value(m, 'kafka_server_brokertopicmetrics_bytesin_total', topic)).toBe(p0.length + p1.length)
    expect(value(m, 'kafka_server_brokertopicmetrics_bytesin_total')).toBe(p0.length + p1.length)
    expect(value(m, 'kafka_server_brokertopicmetrics_messagesin_total', topic)).toBe(12)
    expect(value(m, 'kafka_server_brokertopicmetrics_bytesout_total', topic)).toBe(fetchedBytes)
    expect(value(m, 'kafka_server_brokertopicmetrics_totalproducerequests_total', topic)).toBe(2)
    expect(value(m, 'kafka_server_brokertopicmetrics_failedproducerequests_total', topic)).toBe(1)
    expect(value(m, 'kafka_server_brokertopicmetrics_totalfetchrequests_total', topic)).toBe(1)
    expect(value(m, 'kafka_network_requestmetrics_requests_total', { request: 'Produce', version: 9 })).toBe(2)
    expect(value(m, 'kafka_network_requestmetrics_requests_total', { request: 'Fetch', version: 12 })).toBe(1)
    // The scrape before counted nothing it did not see: Metadata answered once (plus none from HTTP).
    expect(value(m, 'kafka_network_requestmetrics_requests_total', { request: 'Metadata', version: 12 })).toBe(1)
    expect(value(m, 'kafka_network_requestmetrics_totaltimems', { request: 'Produce' }, 'kafka_network_requestmetrics_totaltimems_count')).toBe(2)
    expect(value(m, 'kafka_network_requestmetrics_totaltimems', { request: 'Produce' }, 'kafka_network_requestmetrics_totaltimems_sum')).toBeGreaterThan(0)
    expect(value(m, 'kafka_network_requestmetrics_requestbytes_total', { request: 'Produce' })).toBeGreaterThan(p0.length + p1.length)
    expect(value(m, 'kafka_server_replicamanager_partitioncount')).toBe(2)
    expect(value(m, 'kafka_controller_kafkacontroller_globaltopiccount')).toBe(1)
    expect(value(m, 'kafka_log_log_size', { topic: 'orders', partition: 0 })).toBe(p0.length)
    expect(value(m, 'kafka_log_log_size', { topic: 'orders', partition: 1 })).toBe(p1.length)
    expect(value(m, 'kafka_log_log_logendoffset', { topic: 'orders', partition: 0 })).toBe(5)
    expect(value(m, 'kafka_log_log_logendoffset', { topic: 'orders', partition: 1 })).toBe(7)
    expect(value(m, 'kafka_consumergroup_lag', { consumergroup: 'billing', topic: 'orders', partition: 0 })).toBe(3)
    expect(value(m, 'kafka_consumergroup_current_offset', { consumergroup: 'billing', topic: 'orders', partition: 0 })).toBe(2)
    expect(m.get('kafka_consumergroup_members')?.type).toBe('gauge')
    for (const k of ['min', 'max', 'mean', 'p50', 'p90', 'p99']) expect(value(m, `nodejs_eventloop_lag_${k}_seconds`)).toBeGreaterThanOrEqual(0)

    // Counters only grow, and by exactly what the next request carried.
    const more = makeBatch(4)
    await c.request(ApiKeys.Produce, 3, produceBody('orders', [{ index: 1, records: more }]))
    const after = await scrape(b)
    expect(value(after, 'kafka_server_brokertopicmetrics_messagesin_total', topic)).toBe(16)
    expect(value(after, 'kafka_server_brokertopicmetrics_bytesin_total', topic)).toBe(p0.length + p1.length + more.length)
    expect(value(after, 'kafka_consumergroup_lag', { consumergroup: 'billing', topic: 'orders', partition: 0 })).toBe(3)

    // A deleted topic's series go (as Kafka removes its topic metrics); the all-topics totals stay.
    const deleted = await c.request(ApiKeys.DeleteTopics, 6, { topics: [{ name: 'orders', topicId: ZERO_UUID }], timeoutMs: 5000 })
    expect(deleted.responses[0].errorCode).toBe(0)
    const gone = await until('the deleted topic\'s series to go', async () => {
      const m = await scrape(b)
      return value(m, 'kafka_server_brokertopicmetrics_messagesin_total', topic) === undefined ? m : undefined
    })
    expect(value(gone, 'kafka_server_brokertopicmetrics_messagesin_total')).toBe(16)
    expect(value(gone, 'kafka_log_log_size', { topic: 'orders', partition: 0 })).toBeUndefined()
    expect(value(gone, 'kafka_server_replicamanager_partitioncount')).toBe(0)
  })

  it('counts fetches by topic id (v13+) and acks=0 produces, which have no answer to check', async () => {
    const b = await start()
    const c = await connectTracked(open, b)
    await createTopic(c, 'ids')
    const batch = makeBatch(6)
    // acks=0: the broker sends nothing back, so the next request's answer shows it was handled.
    c.fireAndForget(ApiKeys.Produce, 9, { ...produceBody('ids', [{ index: 0, records: batch }]), acks: 0 })
    const meta = await c.request(ApiKeys.Metadata, 12, { topics: [{ name: 'ids', topicId: ZERO_UUID }], allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })
    const r = await c.request(ApiKeys.Fetch, 17, {
      ...fetchBody('ids', 0),
      topics: [{ topicId: meta.topics[0].topicId, partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 << 20, logStartOffset: -1n, currentLeaderEpoch: -1, lastFetchedEpoch: -1 }] }],
    })
    expect(r.responses[0].partitions[0].records.length).toBe(batch.length)
    const m = await scrape(b)
    expect(value(m, 'kafka_server_brokertopicmetrics_messagesin_total', { topic: 'ids' })).toBe(6)
    expect(value(m, 'kafka_server_brokertopicmetrics_bytesout_total', { topic: 'ids' })).toBe(batch.length)
    expect(value(m, 'kafka_network_requestmetrics_requests_total', { request: 'Fetch', version: 17 })).toBe(1)
  })

  it('escapes names a scraper would choke on, and rejects writes', async () => {
    const b = await start()
    const c = await connectTracked(open, b)
    // Topic names cannot hold quotes, but group ids can hold anything.
    await createTopic(c, 't.1')
    await c.request(ApiKeys.OffsetCommit, 8, {
      groupId: 'we"ird\\group\nname',
      generationIdOrMemberEpoch: -1,
      memberId: '',
      groupInstanceId: null,
      topics: [{ name: 't.1', partitions: [{ partitionIndex: 0, committedOffset: 0n, committedLeaderEpoch: -1, committedMetadata: null }] }],
    })
    const m = await scrape(b)
    expect(value(m, 'kafka_consumergroup_lag', { consumergroup: 'we"ird\\group\nname', topic: 't.1', partition: 0 })).toBe(0)
    const post = await fetch(`${b.console!.url}metrics`, { method: 'POST', body: 'x' })
    expect(post.status).toBe(405)
    expect(await post.json()).toMatchObject({ error: 'INVALID_REQUEST' })
  })

  it('counts error codes per API as Kafka\'s ErrorsPerSec does (NONE included), by exactly what each response carried', async () => {
    const b = await start()
    const c = await connectTracked(open, b)
    await createTopic(c, 'errs')
    const errors = (m: Map<string, Family>, request: string, error: string) => value(m, 'kafka_network_requestmetrics_errors_total', { request, error }) ?? 0
    const before = await scrape(b)
    // One produce: two partitions appended (NONE twice) and one that does not exist.
    const r = await c.request(ApiKeys.Produce, 9, produceBody('errs', [{ index: 0, records: makeBatch(1) }, { index: 1, records: makeBatch(1) }, { index: 7, records: makeBatch(1) }]))
    expect(r.responses[0].partitionResponses.map((p: { errorCode: number }) => p.errorCode)).toEqual([0, 0, ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION])
    const meta = await c.request(ApiKeys.Metadata, 12, { topics: [{ name: 'missing', topicId: ZERO_UUID }], allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })
    expect(meta.topics[0].errorCode).toBe(ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION)
    const after = await scrape(b)
    expect(errors(after, 'Produce', 'NONE') - errors(before, 'Produce', 'NONE')).toBe(2)
    expect(errors(after, 'Produce', 'UNKNOWN_TOPIC_OR_PARTITION') - errors(before, 'Produce', 'UNKNOWN_TOPIC_OR_PARTITION')).toBe(1)
    expect(errors(after, 'Metadata', 'UNKNOWN_TOPIC_OR_PARTITION') - errors(before, 'Metadata', 'UNKNOWN_TOPIC_OR_PARTITION')).toBe(1)
    expect(errors(after, 'Fetch', 'NONE')).toBe(0)
    expect(after.get('kafka_network_requestmetrics_errors_total')?.type).toBe('counter')
  })

  it('counts connections opened, open and closed per listener, failed SASL authentications, and requests waiting for an answer', async () => {
    const dir = tempDir()
    const users = `${dir}/users.jaas`
    writeFileSync(users, 'KafkaServer { x required user_alice="alice-pw"; };\n')
    const b = await start({ dataDir: `${dir}/data`, listeners: 'PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0', saslPlainUsersFile: users, connectionFailedAuthenticationDelayMs: 0 })
    const [plain, sasl] = b.listeners.map((l) => l.port)
    const labels = (listener: string) => ({ listener, networkProcessor: '0' })
    const socket = (m: Map<string, Family>, what: string, listener: string) => value(m, `kafka_server_socket_server_metrics_${what}`, labels(listener))

    const clients = await Promise.all([1, 2, 3].map(() => Raw.connect(plain!)))
    open.clients.push(...clients)
    clients[0]!.close()
    const m = await until('3 accepted, 1 closed on PLAINTEXT', async () => {
      const m = await scrape(b, 'alice:alice-pw')
      return socket(m, 'connection_close_total', 'PLAINTEXT') === 1 ? m : undefined
    })
    expect(socket(m, 'connection_creation_total', 'PLAINTEXT')).toBe(3)
    expect(socket(m, 'connection_count', 'PLAINTEXT')).toBe(2)
    expect(m.get('kafka_server_socket_server_metrics_connection_count')?.type).toBe('gauge')

    // Two wrong passwords and one right one on the SASL listener.
    for (const password of ['wrong', 'also-wrong', 'alice-pw']) {
      const c = await Raw.connect(sasl!)
      open.clients.push(c)
      expect((await login(c, 'PLAIN', 'alice', password)).errorCode).toBe(password === 'alice-pw' ? 0 : ErrorCodes.SASL_AUTHENTICATION_FAILED)
    }
    const s = await until('the failed SASL connections closed', async () => {
      const m = await scrape(b, 'alice:alice-pw')
      return socket(m, 'connection_close_total', 'SASL_PLAINTEXT') === 2 ? m : undefined
    })
    expect(socket(s, 'failed_authentication_total', 'SASL_PLAINTEXT')).toBe(2)
    expect(socket(s, 'failed_authentication_total', 'PLAINTEXT')).toBe(0)
    expect(socket(s, 'connection_creation_total', 'SASL_PLAINTEXT')).toBe(3)
    expect(socket(s, 'connection_count', 'SASL_PLAINTEXT')).toBe(1)

    // A fetch parked on an empty partition is read and not answered: the queue holds exactly it.
    const c = clients[1]!
    await createTopic(c, 'wait')
    expect(value(await scrape(b, 'alice:alice-pw'), 'kafka_network_requestchannel_requestqueuesize')).toBe(0)
    const parked = c.request(ApiKeys.Fetch, 12, { ...fetchBody('wait', 0), maxWaitMs: 30_000 })
    await until('the parked fetch counted', async () => ((value(await scrape(b, 'alice:alice-pw'), 'kafka_network_requestchannel_requestqueuesize') ?? 0) === 1 ? true : undefined))
    await clients[2]!.request(ApiKeys.Produce, 9, produceBody('wait', [{ index: 0, records: makeBatch(1) }]))
    expect((await parked).responses[0].partitions[0].records.length).toBeGreaterThan(0)
    await until('the queue empty again', async () => ((value(await scrape(b, 'alice:alice-pw'), 'kafka_network_requestchannel_requestqueuesize') ?? -1) === 0 ? true : undefined))
  })
})
