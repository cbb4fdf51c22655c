/**
 * The Java client's own requests (and Kafka's answers to them), captured by a proxy
 * while Kafka's ProducerPerformance (idempotent, snappy) and ConsoleConsumer (in a
 * group) run: every frame must decode with our codec and re-encode to the same bytes.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Reader, Writer, decodeRequestHeader, decodeResponseHeader, getApi, writeRequestHeader } from '@tidelog/protocol'
import { startCaptureProxy, type CaptureProxy } from '../helpers/capture-proxy.js'
import { KAFKA_VERSIONS, peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { kafkaUse, recordsPeers } from '../helpers/peers.js'

const goldenDir = fileURLToPath(new URL('../../packages/protocol/test/golden/java-client/', import.meta.url))

// 3.9 is the newest line whose every API version our codec generates (4.x adds Produce 12+).
const version = KAFKA_VERSIONS.previous

describe(`Java client ${version} requests through a capturing proxy`, () => {
  let kafka: KafkaNode | undefined
  // The tools run from the broker's own jars: one version for both.
  recordsPeers(() => kafka && [...kafkaUse(kafka)!, { peer: 'Java client', version: kafka.runtimeVersion }])
  let proxy: CaptureProxy
  let skip: string | undefined

  beforeAll(async () => {
    let target = { host: '127.0.0.1', port: 0 }
    proxy = await startCaptureProxy(() => target)
    try {
      kafka = await startKafka({
        version,
        // Every connection the Java client makes, bootstrap or not, goes through the proxy.
        properties: { 'advertised.listeners': `PLAINTEXT://127.0.0.1:${proxy.port}` },
      })
    } catch (e) {
      skip = peerUnavailable(`Apache Kafka ${version}`, e) as string
      return
    }
    target = { host: '127.0.0.1', port: kafka.port }
  })

  afterAll(async () => {
    await proxy?.close()
    await kafka?.stop()
  })

  it('ProducerPerformance and ConsoleConsumer complete through the proxy', async (ctx) => {
    if (skip) return ctx.skip()
    const bootstrap = `127.0.0.1:${proxy.port}`
    await kafka!.java('org.apache.kafka.tools.TopicCommand', ['--bootstrap-server', bootstrap, '--create', '--topic', 'golden', '--partitions', '3'])
    const perf = await kafka!.java('org.apache.kafka.tools.ProducerPerformance', [
      '--topic', 'golden', '--num-records', '3000', '--record-size', '100', '--throughput', '-1',
      '--producer-props', `bootstrap.servers=${bootstrap}`, 'compression.type=snappy', 'acks=all', 'enable.idempotence=true', 'linger.ms=5',
    ])
    expect(perf.stdout).toMatch(/3000 records sent/)
    const consumed = await kafka!.java('org.apache.kafka.tools.consumer.ConsoleConsumer', [
      '--bootstrap-server', bootstrap, '--topic', 'golden', '--group', 'golden-group', '--from-beginning',
      '--max-messages', '3000', '--timeout-ms', '30000',
    ])
    expect(consumed.stdout.trim().split('\n')).toHaveLength(3000)
  })

  it('every request the Java client sent re-encodes byte for byte', async (ctx) => {
    if (skip) return ctx.skip()
    const seen = new Map<string, number>()
    for (const ex of proxy.exchanges) {
      const r = new Reader(ex.request)
      const header = decodeRequestHeader(r)
      const api = getApi(header.apiKey)
      if (!api || header.apiVersion > api.maxVersion || header.apiVersion < api.minVersion) continue
      const body = api.decodeRequest(r, header.apiVersion)
      expect(r.remaining).toBe(0)
      const w = new Writer(64)
      writeRequestHeader(w, header)
      api.encodeRequest(w, body, header.apiVersion)
      expect(w.finish().toString('hex'), `${api.name} v${header.apiVersion} request`).toBe(ex.request.toString('hex'))
      const key = `${api.name}-v${header.apiVersion}`
      seen.set(key, (seen.get(key) ?? 0) + 1)
      if (ex.response) {
        const rr = new Reader(ex.response)
        decodeResponseHeader(rr, header.apiKey, header.apiVersion)
        const bodyStart = rr.pos
        const res = api.decodeResponse(rr, header.apiVersion)
        expect(rr.remaining).toBe(0)
        const rw = new Writer(64)
        api.encodeResponse(rw, res, header.apiVersion)
        expect(rw.finish().toString('hex'), `${api.name} v${header.apiVersion} response`).toBe(ex.response.subarray(bodyStart).toString('hex'))
      }
      if (process.env.TIDELOG_UPDATE_GOLDEN === '1' && seen.get(key) === 1) {
        const dir = `${goldenDir}${version}`
        mkdirSync(dir, { recursive: true })
        const origin = `sent by the Java client ${version} (ProducerPerformance / ConsoleConsumer / TopicCommand) to Apache Kafka ${version}, captured by test/interop/java-client-bytes.test.ts`
        const hex = (b: Buffer) => b.toString('hex').replace(/(.{128})/g, '$1\n') + '\n'
        writeFileSync(`${dir}/${key}-request.hex`, `# ${api.name} request v${header.apiVersion}: header + body, ${origin}\n` + hex(ex.request))
        if (ex.response) {
          writeFileSync(`${dir}/${key}-response.hex`, `# ${api.name} response v${header.apiVersion}: header + body, answered by Apache Kafka ${version}\n` + hex(ex.response))
        }
      }
    }
    // The conversation must have covered the producer's and the group consumer's APIs.
    for (const name of ['ApiVersions', 'Metadata', 'InitProducerId', 'Produce', 'FindCoordinator', 'JoinGroup', 'SyncGroup', 'OffsetFetch', 'Fetch', 'OffsetCommit']) {
      expect([...seen.keys()].some((k) => k.startsWith(`${name}-v`)), `${name} seen in ${[...seen.keys()].join(', ')}`).toBe(true)
    }
  })
})
