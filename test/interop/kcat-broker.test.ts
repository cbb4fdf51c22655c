import { afterEach, describe, expect, it } from 'vitest'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Broker, startBroker } from '@tidelog/broker'
import { Consumer } from '@tidelog/consumer'
import { peerUnavailable } from '../helpers/kafka.js'
import { kcat } from '../helpers/kcat.js'
import { kcatVersion, recordsPeers } from '../helpers/peers.js'

const dirs: string[] = []
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'tidelog-kcat-'))
  dirs.push(d)
  return d
}

// kcat is Debian's package (test/helpers/install-peers.sh installs it); without it
// these tests are skipped locally and fail under CI=true (peerUnavailable throws).
function kcatOnPath(): string | undefined {
  try {
    return kcatVersion()
  } catch (e) {
    peerUnavailable('kcat', e)
    return undefined
  }
}
const kcatSeen = kcatOnPath()


let broker: Broker | undefined
afterEach(async () => {
  await broker?.close()
  broker = undefined
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

// kcat is librdkafka: a second, independent client implementation.
describe.skipIf(!kcatSeen)('kcat (librdkafka) against the broker', () => {
  recordsPeers(() => [{ peer: 'kcat', version: kcatSeen! }])
  it.each(['none', 'snappy', 'gzip', 'lz4', 'zstd'])('round-trips 10,000 keyed records byte for byte with -z %s', async (codec) => {
    broker = await startBroker({ port: 0, dataDir: tempDir() })
    const addr = `127.0.0.1:${broker.port}`
    const input = Array.from({ length: 10_000 }, (_, i) => `key-${i}\tvalue-${i}-äöü-${'x'.repeat(i % 50)}`).join('\n') + '\n'
    const topic = `t-${codec}`
    const produce = await kcat(['-b', addr, '-P', '-t', topic, '-K', '\t', '-z', codec, '-X', 'topic.request.required.acks=-1'], input)
    expect(produce.status, produce.stderr).toBe(0)
    const consume = await kcat(['-b', addr, '-C', '-t', topic, '-o', 'beginning', '-e', '-q', '-K', '\t'])
    expect(consume.status, consume.stderr).toBe(0)
    expect(consume.stdout).toBe(input)

    // librdkafka's batches (its own snappy, gzip, lz4 and zstd framing) are read by
    // the tidelog consumer too, in order and byte for byte.
    const consumer = new Consumer({ brokers: [addr], clientId: 'kcat-reader' })
    try {
      consumer.assign([{ topic, partition: 0 }])
      await consumer.seekToBeginning()
      const lines: string[] = []
      for await (const m of consumer) {
        lines.push(`${m.key!.toString()}\t${m.value!.toString()}`)
        if (lines.length === 10_000) break
      }
      expect(lines.join('\n') + '\n').toBe(input)
    } finally {
      await consumer.close()
    }
  })

  it('lists brokers, topics and partitions with -L', async () => {
    broker = await startBroker({ port: 0, dataDir: tempDir(), numPartitions: 3 })
    const addr = `127.0.0.1:${broker.port}`
    await kcat(['-b', addr, '-P', '-t', 'listed'], 'a\n')
    const out = (await kcat(['-b', addr, '-L'])).stdout
    expect(out).toContain(`broker 1 at 127.0.0.1:${broker.port} (controller)`)
    expect(out).toContain('topic "listed" with 3 partitions')
    for (let p = 0; p < 3; p++) expect(out).toContain(`partition ${p}, leader 1, replicas: 1, isrs: 1`)
  })
})
