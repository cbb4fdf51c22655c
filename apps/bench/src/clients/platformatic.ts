import * as platformatic1 from '@platformatic/kafka'
import type { MessageToProduce } from '@platformatic/kafka'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { FETCH, type ClientAdapter, type Rec } from './adapter.js'

/**
 * What the adapter uses of @platformatic/kafka. 1.x (the workspace's) and 2.x (the bench cache's,
 * on Node 22) have the same Producer and Consumer options and calls for what is measured here.
 */
type PlatformaticApi = Pick<typeof platformatic1, 'Producer' | 'Consumer'>
type Msg = MessageToProduce<Buffer, Buffer, Buffer, Buffer>

export function platformaticAdapter(lib: PlatformaticApi): ClientAdapter {
  const { Consumer, Producer } = lib
  return {
    async producer(bootstrap, topic, s) {
      const p = new Producer({
        clientId: 'platformatic-bench',
        bootstrapBrokers: [bootstrap],
        acks: s.acks,
        idempotent: s.idempotent,
        compression: s.compression,
        autocreateTopics: false,
      })
      return {
        prepare: (records: Rec[]): Msg[] => records.map((r) => ({ topic, key: r.key, value: r.value })),
        send: (prepared) => p.send({ messages: prepared as Msg[] }),
        close: () => p.close(),
        // With idempotence, concurrent send() calls get their sequence numbers out of order
        // (OUT_OF_ORDER_SEQUENCE_NUMBER from Kafka and the tidelog broker alike): one at a time.
        maxConcurrentSends: s.idempotent ? 1 : undefined,
      }
    },

    async consumer(bootstrap, topic, groupId, onValue) {
      const c = new Consumer({
        clientId: 'platformatic-bench',
        bootstrapBrokers: [bootstrap],
        groupId,
        minBytes: FETCH.minBytes,
        maxWaitTime: FETCH.maxWaitMs,
        maxBytes: FETCH.maxBytes,
        maxBytesPerPartition: FETCH.maxPartitionBytes,
      })
      const stream = await c.consume({ topics: [topic], mode: 'committed', fallbackMode: 'earliest' })
      stream.on('data', (m: { value: Buffer }) => onValue(m.value))
      return {
        async close() {
          await stream.close()
          await c.close()
        },
      }
    },
  }
}

export const platformatic = platformaticAdapter(platformatic1)

/** The adapter on the @platformatic/kafka package in `dir` (2.x, an ES module). */
export async function platformaticFrom(dir: string): Promise<ClientAdapter> {
  // Its package.json has only "exports" (a string), which a directory path does not go through.
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { exports?: unknown; main?: string }
  const entry = join(dir, typeof pkg.exports === 'string' ? pkg.exports : (pkg.main ?? 'index.js'))
  return platformaticAdapter((await import(pathToFileURL(entry).href)) as PlatformaticApi)
}
