// K1, the codec: record batches of 1,000 records (10-byte keys, 100-byte values)
// encoded and decoded uncompressed, gzip and snappy, against kafkajs 2.2.4 in the
// same process; plus CRC32C throughput and murmur2 hashing. Everything tidelog
// runs here comes from the built @tidelog/protocol, as an application gets it.
import { createRequire } from 'node:module'
import murmurhash from 'murmurhash'
import snappyjs from 'snappyjs'
import {
  crc32c,
  crc32cNative,
  decodeRecordBatch,
  encodeRecordBatch,
  murmur2,
  type CompressionName,
} from '@tidelog/protocol'
import type { Impl } from '../stats.js'
import type { Scenario, Suite } from '../types.js'

const require = createRequire(import.meta.url)
// kafkajs' own protocol modules: the code its producer and consumer run per batch.
const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0/index.js')
const KjsRecord = require('kafkajs/src/protocol/recordBatch/record/v0/index.js')
const KjsDecoder = require('kafkajs/src/protocol/decoder.js')
const kjsDecodeBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder.js')
const kjsCrc32C = require('kafkajs/src/protocol/recordBatch/crc32C/index.js')
const kjsMurmur2 = require('kafkajs/src/producer/partitioners/default/murmur2.js')
const Long = require('kafkajs/src/utils/long.js')
const { CompressionTypes, CompressionCodecs } = require('kafkajs')

// kafkajs ships no snappy codec; its users add one. This is snappyjs, the pure-JS one
// (kafkajs-snappy would pull in a native binding). tidelog's snappy is its own code
// (packages/protocol/src/records/codecs/snappy*.ts), not snappyjs.
CompressionCodecs[CompressionTypes.Snappy] = () => ({
  compress: async (encoder: { buffer: Buffer }) => snappyjs.compress(encoder.buffer),
  decompress: async (buffer: Buffer) => snappyjs.uncompress(buffer),
})

const RECORDS = 1000
const BASE_TS = 1_700_000_000_000

interface Message {
  key: Buffer
  value: Buffer
  timestamp: number
}

function messages(): Message[] {
  return Array.from({ length: RECORDS }, (_, i) => ({
    key: Buffer.from(`key-${String(i).padStart(6, '0')}`), // 10 bytes
    value: Buffer.from(Array.from({ length: 100 }, (_, j) => (i * 31 + j * 7) & 0x7f)), // 100 bytes
    timestamp: BASE_TS + i,
  }))
}

/** kafkajs' produce path for one partition (requests/produce/v3): Record per message, then RecordBatch. */
async function kafkajsEncode(msgs: Message[], compression: number): Promise<Buffer> {
  const first = msgs[0]!.timestamp
  const records = msgs.map((m, i) =>
    KjsRecord({ key: m.key, value: m.value, offsetDelta: i, timestampDelta: m.timestamp - first }),
  )
  const batch = await RecordBatch({
    compression,
    records,
    firstTimestamp: first,
    maxTimestamp: msgs[msgs.length - 1]!.timestamp,
    producerId: Long.fromValue(-1),
    producerEpoch: 0,
    firstSequence: 0,
    lastOffsetDelta: msgs.length - 1,
  })
  return batch.buffer
}

let sink = 0

/** Uses every field a consumer reads, so neither side can skip work. */
function touchTidelog(buf: Buffer): number {
  let n = 0
  for (const r of decodeRecordBatch(buf)) {
    sink += r.key!.length + r.value!.length + Number(r.offset & 1n) + Number(r.timestamp & 1n)
    n++
  }
  return n
}

async function touchKafkajs(buf: Buffer): Promise<number> {
  const batch = await kjsDecodeBatch(new KjsDecoder(buf))
  let n = 0
  for (const r of batch.records) {
    sink += r.key.length + r.value.length + (r.offset.length & 1) + (r.timestamp.length & 1)
    n++
  }
  return n
}

const CODECS: Array<{ name: CompressionName; kafkajs: number; title: string }> = [
  { name: 'none', kafkajs: CompressionTypes.None, title: 'uncompressed' },
  { name: 'gzip', kafkajs: CompressionTypes.GZIP, title: 'gzip' },
  { name: 'snappy', kafkajs: CompressionTypes.Snappy, title: 'snappy' },
]

async function scenarios(): Promise<Scenario[]> {
  const msgs = messages()
  const out: Scenario[] = []
  let n = 1
  for (const c of CODECS) {
    const ours = encodeRecordBatch({ records: msgs, compression: c.name })
    const theirs = await kafkajsEncode(msgs, c.kafkajs)
    // Each side decodes the other's bytes too, before anything is timed.
    if (touchTidelog(theirs) !== RECORDS || (await touchKafkajs(ours)) !== RECORDS) {
      throw new Error(`${c.name}: the two codecs do not read each other's batches`)
    }
    out.push({
      id: `K1.${n++}`,
      title: `encode RecordBatch, 1,000 records (10 B keys, 100 B values), ${c.title}`,
      unit: 'records/s',
      higherIsBetter: true,
      impls: [
        { name: 'tidelog', run: () => (encodeRecordBatch({ records: msgs, compression: c.name }), RECORDS) },
        { name: 'kafkajs', run: async () => ((await kafkajsEncode(msgs, c.kafkajs)), RECORDS) },
      ],
    })
    out.push({
      id: `K1.${n++}`,
      title: `decode RecordBatch and read every record, ${c.title}${c.name === 'none' ? ' (tidelog checks the CRC, kafkajs does not)' : ''}`,
      unit: 'records/s',
      higherIsBetter: true,
      impls: [
        { name: 'tidelog', run: () => touchTidelog(ours) },
        { name: 'kafkajs', run: () => touchKafkajs(theirs) },
      ],
    })
  }

  const block = encodeRecordBatch({ records: msgs })
  const mb = block.length / 1e6
  out.push({
    id: `K1.${n++}`,
    title: `CRC32C over a ${Math.round(block.length / 1024)} KiB batch (tidelog: ${crc32cNative ? 'native @node-rs/crc32' : 'plain JS'})`,
    unit: 'MB/s',
    higherIsBetter: true,
    impls: [
      { name: 'tidelog', run: () => ((sink ^= crc32c(block)), mb) },
      { name: 'kafkajs', run: () => ((sink ^= kjsCrc32C(block)), mb) },
    ],
  })

  // Keys as a producer hands them over: strings of 10 ASCII characters, and the
  // same keys as bytes.
  const keys = msgs.map((m) => m.key.toString())
  const keyBytes = msgs.map((m) => m.key)
  const hashAll = (f: (k: string | Buffer) => number, ks: Array<string | Buffer>) => () => {
    for (let i = 0; i < ks.length; i++) sink ^= f(ks[i]!)
    return ks.length
  }
  const mm = (k: string | Buffer) => murmurhash.v2(k, 0x9747b28c) | 0
  for (const [what, ks] of [
    ['string', keys],
    ['byte', keyBytes],
  ] as const) {
    out.push({
      id: `K1.${n++}`,
      title: `murmur2 (Kafka's partitioner hash) of 10-${what} keys`,
      unit: 'hashes/s',
      higherIsBetter: true,
      impls: [
        { name: 'tidelog', run: hashAll(murmur2, ks) },
        { name: 'kafkajs', run: hashAll(kjsMurmur2, ks) },
        { name: 'murmurhash', run: hashAll(mm, ks) },
      ] satisfies Impl[],
    })
  }
  // The three murmur2s must agree before their speeds mean anything.
  for (const k of [...keys.slice(0, 50), 'foobar', 'ключ']) {
    if (murmur2(k) !== kjsMurmur2(k) || murmur2(k) !== mm(k)) throw new Error(`murmur2 implementations disagree on ${k}`)
  }
  return out
}

export const codec: Suite = {
  name: 'codec',
  ids: ['K1'],
  description: 'record batch encode/decode, CRC32C and murmur2 against kafkajs 2.2.4',
  scenarios,
}

export function codecSink(): number {
  return sink
}
