/**
 * kafka-python (python3-kafka) and librdkafka through confluent-kafka
 * (python3-confluent-kafka) against the tidelog broker: each produces, consumes in
 * a group, commits, and a second consumer in the same group resumes after the
 * commit. The modules belong to Debian's /usr/bin/python3 (installed by
 * test/helpers/install-peers.sh); a missing one fails under CI=true.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startBroker, type Broker } from '@tidelog/broker'
import { peerUnavailable } from '../helpers/kafka.js'
import { pythonVersion, recordPeer, type Peer } from '../helpers/peers.js'

const PYTHON = '/usr/bin/python3'

/** The module's version as it reports it, or undefined (a failure under CI=true) when it is missing. */
function moduleVersion(module: string, expression: string): string | undefined {
  try {
    return pythonVersion(PYTHON, expression, module)
  } catch (e) {
    peerUnavailable(`${PYTHON} module ${module}`, e)
    return undefined
  }
}

/** Runs a Python script without blocking the event loop (the broker lives in this process). */
function python(script: string, args: string[], timeoutMs = 90_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, ['-c', script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('close', (code) => {
      clearTimeout(timer)
      if (code === 0) resolve(out)
      else reject(new Error(`python exited ${code}:\n${err}\n${out}`))
    })
  })
}

const KAFKA_PYTHON = `
import sys, json
from kafka import KafkaProducer, KafkaConsumer, TopicPartition
bootstrap, topic, group, mode, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
if mode == 'produce':
    p = KafkaProducer(bootstrap_servers=bootstrap, acks='all', compression_type='gzip', linger_ms=5)
    futures = [p.send(topic, key=('k%d' % (i % 13)).encode(), value=('v%d' % i).encode(), headers=[('h', b'x')]) for i in range(n)]
    p.flush()
    offsets = [f.get(timeout=30).offset for f in futures]
    print(json.dumps({'sent': len(offsets)}))
else:
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset='earliest',
                      enable_auto_commit=False, consumer_timeout_ms=8000)
    seen = []
    for m in c:
        seen.append(m.value.decode())
        assert m.headers == [('h', b'x')], m.headers
        if len(seen) == n:
            break
    c.commit()
    committed = sum(c.committed(TopicPartition(topic, p)) or 0 for p in c.partitions_for_topic(topic))
    c.close()
    print(json.dumps({'seen': seen, 'committed': committed}))
`

const CONFLUENT = `
import sys, json
from confluent_kafka import Producer, Consumer, TopicPartition
bootstrap, topic, group, mode, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
if mode == 'produce':
    p = Producer({'bootstrap.servers': bootstrap, 'enable.idempotence': True, 'compression.type': 'snappy', 'linger.ms': 5})
    acked = []
    def done(err, msg):
        if err is not None:
            raise Exception(str(err))
        acked.append(msg.offset())
    for i in range(n):
        p.produce(topic, key=('k%d' % (i % 13)).encode(), value=('v%d' % i).encode(), on_delivery=done)
        p.poll(0)
    p.flush(30)
    print(json.dumps({'sent': len(acked)}))
else:
    c = Consumer({'bootstrap.servers': bootstrap, 'group.id': group, 'auto.offset.reset': 'earliest',
                  'enable.auto.commit': False})
    c.subscribe([topic])
    seen = []
    idle = 0
    while len(seen) < n and idle < 40:
        m = c.poll(0.25)
        if m is None:
            idle += 1
            continue
        if m.error():
            raise Exception(str(m.error()))
        idle = 0
        seen.append(m.value().decode())
    c.commit(asynchronous=False)
    parts = c.assignment()
    committed = sum(max(tp.offset, 0) for tp in c.committed(parts, timeout=10))
    c.close()
    print(json.dumps({'seen': seen, 'committed': committed}))
`

const clients = [
  { name: 'kafka-python', peer: 'kafka-python', module: 'kafka', version: 'kafka.__version__', script: KAFKA_PYTHON },
  // confluent-kafka's own version, then the librdkafka it is linked against.
  { name: 'confluent-kafka (librdkafka)', peer: 'confluent-kafka', module: 'confluent_kafka', version: "confluent_kafka.version()[0] + ' (librdkafka ' + confluent_kafka.libversion()[0] + ')'", script: CONFLUENT },
] satisfies { name: string; peer: Peer; module: string; version: string; script: string }[]

describe('Python clients against the tidelog broker', () => {
  let broker: Broker
  let dataDir: string
  let bootstrap: string

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'tidelog-python-'))
    broker = await startBroker({ port: 0, dataDir, numPartitions: 3, logLevel: 'warn' })
    bootstrap = `127.0.0.1:${broker.port}`
  })
  afterAll(async () => {
    await broker?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  for (const client of clients) {
    it(`${client.name}: produce, consume in a group, commit, resume`, async (ctx) => {
      const version = moduleVersion(client.module, client.version)
      if (!version) return ctx.skip()
      recordPeer(client.peer, version)
      const topic = `py-${client.module}`
      const group = `${topic}-group`
      const n = 2000
      const produced = JSON.parse(await python(client.script, [bootstrap, topic, group, 'produce', String(n)]))
      expect(produced.sent).toBe(n)

      // The first consumer reads half and commits; the second resumes from there.
      const first = JSON.parse(await python(client.script, [bootstrap, topic, group, 'consume', String(n / 2)]))
      expect(first.seen).toHaveLength(n / 2)
      expect(first.committed).toBe(n / 2)
      const second = JSON.parse(await python(client.script, [bootstrap, topic, group, 'consume', String(n / 2)]))
      const all = new Set([...first.seen, ...second.seen])
      expect(all.size).toBe(n)
      expect(second.committed).toBe(n)
    })
  }
})
