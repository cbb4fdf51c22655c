import kafkajs from 'kafkajs'
import { describe, expect, it } from 'vitest'
import { ProtocolError } from '@tidelog/protocol'
import * as ours from '@tidelog/kafkajs'
import { CompressionCodecs, CompressionTypes, Kafka, KafkaJSError, KafkaJSNonRetriableError, KafkaJSProtocolError, logLevel, toKafkaJSError, type LogEntry } from '@tidelog/kafkajs'

describe('@tidelog/kafkajs surface', () => {
  it('exports every runtime name kafkajs 2.2.4 exports', () => {
    const missing = Object.keys(kafkajs).filter((k) => !(k in ours))
    // Not provided: kafkajs' assigner protocol internals and its default round-robin assigner
    // object (the group always uses round-robin under kafkajs' name here).
    expect(missing.sort()).toEqual(['AssignerProtocol', 'PartitionAssigners'])
    for (const e of ['NOTHING', 'ERROR', 'WARN', 'INFO', 'DEBUG'] as const) expect(logLevel[e]).toBe(kafkajs.logLevel[e])
    for (const c of ['None', 'GZIP', 'Snappy', 'LZ4', 'ZSTD'] as const) expect(CompressionTypes[c]).toBe(kafkajs.CompressionTypes[c])
  })

  it('logCreator gets kafkajs-shaped entries at the configured level; namespaces and setLogLevel work', () => {
    const entries: LogEntry[] = []
    const kafka = new Kafka({ brokers: ['127.0.0.1:1'], logLevel: logLevel.WARN, logCreator: () => (e) => entries.push(e) })
    const log = kafka.logger().namespace('App')
    log.info('hidden')
    log.warn('shown', { extra: 1 })
    log.setLogLevel(logLevel.DEBUG)
    log.debug('now shown')
    expect(entries.map((e) => [e.namespace, e.label, e.level, e.log.message])).toEqual([
      ['App', 'WARN', logLevel.WARN, 'shown'],
      ['App', 'DEBUG', logLevel.DEBUG, 'now shown'],
    ])
    expect(entries[0]!.log).toMatchObject({ extra: 1 })
    expect(typeof entries[0]!.log.timestamp).toBe('string')
  })

  it('native errors become kafkajs classes with Kafka type, code and retriable', () => {
    const e = toKafkaJSError(new ProtocolError(6, { topic: 't', partition: 0 })) as KafkaJSProtocolError
    expect(e).toBeInstanceOf(KafkaJSProtocolError)
    expect(e).toBeInstanceOf(KafkaJSError)
    expect({ name: e.name, type: e.type, code: e.code, retriable: e.retriable }).toEqual({ name: 'KafkaJSProtocolError', type: 'NOT_LEADER_OR_FOLLOWER', code: 6, retriable: true })
    const n = new KafkaJSNonRetriableError('x')
    expect({ name: n.name, retriable: n.retriable }).toEqual({ name: 'KafkaJSNonRetriableError', retriable: false })
  })

  it('registering a kafkajs codec is accepted; the built-in codecs round-trip', async () => {
    const original = CompressionCodecs[CompressionTypes.Snappy]
    CompressionCodecs[CompressionTypes.Snappy] = () => ({ compress: async () => Buffer.alloc(0), decompress: async () => Buffer.alloc(0) })
    CompressionCodecs[CompressionTypes.Snappy] = original!
    for (const t of [CompressionTypes.GZIP, CompressionTypes.Snappy, CompressionTypes.LZ4, CompressionTypes.ZSTD]) {
      const codec = CompressionCodecs[t]!()
      const data = Buffer.from('hello hello hello hello '.repeat(20))
      expect(await codec.decompress(await codec.compress({ buffer: data }))).toEqual(data)
    }
  })

  it('on() refuses an unknown event name, as kafkajs', () => {
    const kafka = new Kafka({ brokers: ['127.0.0.1:1'], logLevel: logLevel.NOTHING })
    const p = kafka.producer()
    expect(() => p.on('producer.nope', () => {})).toThrow(/Event name should be one of producer\.events\.CONNECT/)
    // kafkajs checks the transactional id at transaction(), not here.
    expect(kafka.producer({ transactionalId: 'tx' }).transaction).toBeTypeOf('function')
  })
})
