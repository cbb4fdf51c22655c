/**
 * @kafkajs/confluent-schema-registry's encode / decode as a value serde of our typed Producer and
 * Consumer, over a real socket, with a small HTTP server in the test answering the Confluent
 * Schema Registry REST calls that library makes (GET/PUT /config/{subject}, POST
 * /subjects/{subject}/versions, GET /schemas/ids/{id}).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry'
import { Admin, type Serde } from '@tidelog/client'
import { Consumer, RecordDeserializationError } from '@tidelog/consumer'
import { Producer } from '@tidelog/producer'
import { afterEach, describe, expect, it } from 'vitest'
import { startTestBroker } from '../../packages/consumer/test/helpers/broker.js'

interface Registry {
  url: string
  calls: string[]
  close(): Promise<void>
}

const JSON_TYPE = 'application/vnd.schemaregistry.v1+json'

/** The registry's REST API as far as the library uses it: subjects, versions, ids, per-subject config. */
async function startRegistry(): Promise<Registry> {
  const schemas: { schema: string; schemaType?: string }[] = []
  const subjects = new Map<string, number[]>()
  const configs = new Map<string, string>()
  const calls: string[] = []
  const body = async (req: IncomingMessage): Promise<Record<string, unknown>> => {
    let s = ''
    for await (const chunk of req) s += String(chunk)
    return s === '' ? {} : (JSON.parse(s) as Record<string, unknown>)
  }
  const server: Server = createServer((req, res) => {
    const reply = (status: number, payload: unknown): void => {
      res.writeHead(status, { 'content-type': JSON_TYPE })
      res.end(JSON.stringify(payload))
    }
    void (async () => {
      const url = new URL(req.url!, 'http://registry')
      calls.push(`${req.method} ${url.pathname}`)
      let m: RegExpMatchArray | null
      if ((m = url.pathname.match(/^\/config\/([^/]+)$/)) !== null) {
        const subject = decodeURIComponent(m[1]!)
        if (req.method === 'PUT') {
          const { compatibility } = await body(req)
          configs.set(subject, String(compatibility))
          return reply(200, { compatibility })
        }
        const level = configs.get(subject)
        return level === undefined ? reply(404, { error_code: 40408, message: `Subject '${subject}' does not have subject-level compatibility configured` }) : reply(200, { compatibilityLevel: level })
      }
      if ((m = url.pathname.match(/^\/subjects\/([^/]+)\/versions$/)) !== null && req.method === 'POST') {
        const subject = decodeURIComponent(m[1]!)
        const b = await body(req)
        let id = schemas.findIndex((s) => s.schema === b.schema) + 1
        if (id === 0) id = schemas.push({ schema: String(b.schema), ...(b.schemaType === undefined ? {} : { schemaType: String(b.schemaType) }) })
        const versions = subjects.get(subject) ?? []
        if (!versions.includes(id)) versions.push(id)
        subjects.set(subject, versions)
        return reply(200, { id })
      }
      if ((m = url.pathname.match(/^\/schemas\/ids\/(\d+)$/)) !== null) {
        const s = schemas[Number(m[1]) - 1]
        return s === undefined ? reply(404, { error_code: 40403, message: 'Schema not found' }) : reply(200, s)
      }
      reply(404, { error_code: 404, message: `no route ${req.method} ${url.pathname}` })
    })()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}

// The README's snippet: subjects named after the topic (Confluent's TopicNameStrategy), one
// registration per topic, decode by the id in the record.
function registryValueSerde<T>(registry: SchemaRegistry, schema: string): Serde<T> {
  const ids = new Map<string, Promise<number>>()
  return {
    async serialize(value, { topic }) {
      let id = ids.get(topic)
      if (id === undefined) ids.set(topic, (id = registry.register({ type: SchemaType.AVRO, schema }, { subject: `${topic}-value` }).then((r) => r.id)))
      return registry.encode(await id, value)
    },
    deserialize: (data) => registry.decode(data) as Promise<T>,
  }
}

interface Order {
  id: string
  amount: number
  note: string | null
}
const ORDER_SCHEMA = JSON.stringify({
  type: 'record',
  name: 'Order',
  namespace: 'shop',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'amount', type: 'double' },
    { name: 'note', type: ['null', 'string'], default: null },
  ],
})

const closers: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c().catch(() => undefined)
})

describe('@kafkajs/confluent-schema-registry as a value serde', () => {
  it('an Avro record round-trips: registered under <topic>-value, Confluent framing on the wire, decoded by a fresh registry client', async () => {
    const registry = await startRegistry()
    closers.push(() => registry.close())
    const { brokers } = await startTestBroker(1)
    const admin = new Admin({ brokers })
    await admin.createTopics([{ name: 'orders', partitions: 1 }])
    await admin.close()

    const producer = new Producer<string, Order>({ brokers, lingerMs: 0, keySerializer: { serialize: (k) => Buffer.from(k) }, valueSerializer: registryValueSerde<Order>(new SchemaRegistry({ host: registry.url }), ORDER_SCHEMA) })
    closers.push(() => producer.close())
    const sent: Order[] = [
      { id: 'o-1', amount: 12.5, note: null },
      { id: 'o-2', amount: 99.99, note: 'gift wrap' },
    ]
    await producer.send(sent.map((value) => ({ topic: 'orders', key: value.id, value })))

    // What is on the wire: magic byte 0, the schema id (big-endian int32), the Avro body.
    const raw = new Consumer({ brokers, autoOffsetReset: 'earliest' })
    closers.push(() => raw.close())
    raw.assign([{ topic: 'orders', partition: 0 }])
    for await (const m of raw) {
      expect(m.value![0]).toBe(0)
      expect(m.value!.readInt32BE(1)).toBe(1)
      break
    }

    const consumer = new Consumer<string, Order>({
      brokers,
      groupId: 'billing',
      autoOffsetReset: 'earliest',
      keyDeserializer: { deserialize: (b) => b.toString() },
      valueDeserializer: registryValueSerde<Order>(new SchemaRegistry({ host: registry.url }), ORDER_SCHEMA),
    })
    closers.push(() => consumer.close())
    await consumer.subscribe(['orders'])
    const got: Order[] = []
    const running = consumer.run({
      eachMessage: async ({ message }) => {
        got.push(message.value!)
        if (got.length === sent.length) void consumer.stop()
      },
    })
    await running
    expect(got).toEqual(sent)
    expect(registry.calls).toContain('POST /subjects/orders-value/versions')
    expect(registry.calls).toContain('GET /schemas/ids/1')
  })

  it('a record whose schema id the registry does not know: RecordDeserializationError with the partition and offset, nothing lost', async () => {
    const registry = await startRegistry()
    closers.push(() => registry.close())
    const { brokers } = await startTestBroker(1)
    const producer = new Producer({ brokers, lingerMs: 0 })
    closers.push(() => producer.close())
    const bogus = Buffer.concat([Buffer.from([0, 0, 0, 0, 42]), Buffer.from('not avro')])
    const { offset } = await producer.send({ topic: 'mixed', value: bogus })
    const consumer = new Consumer<Buffer, Order>({ brokers, autoOffsetReset: 'earliest', valueDeserializer: registryValueSerde<Order>(new SchemaRegistry({ host: registry.url, retry: { retries: 0 } }), ORDER_SCHEMA) })
    closers.push(() => consumer.close())
    consumer.assign([{ topic: 'mixed', partition: 0 }])
    const err = await (async () => {
      for await (const _ of consumer) return undefined
    })().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RecordDeserializationError)
    expect(err).toMatchObject({ topic: 'mixed', partition: 0, offset, isKey: false })
    expect(registry.calls).toContain('GET /schemas/ids/42')
    // The partition stays at the bad record: it is read again, not skipped.
    expect(await consumer.position({ topic: 'mixed', partition: 0 })).toBe(offset)
  })
})
