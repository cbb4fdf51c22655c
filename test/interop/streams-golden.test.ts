import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { peerUnavailable } from '../helpers/kafka.js'
import { kafkaLibsVersion, recordPeer } from '../helpers/peers.js'
import { GOLDEN, JOIN_GOLDEN, runJavaGolden, runJavaJoinGolden, STREAMS_VERSION } from '../streams-java/golden.js'

/**
 * The golden outputs packages/streams/test/golden.test.ts holds our TopologyTestDriver to are
 * what Kafka Streams' own TopologyTestDriver prints today: GoldenTopologies.java is compiled
 * and run again here (no broker; one JVM, ~10 s once the jars are cached).
 */
describe(`Kafka Streams ${STREAMS_VERSION} TopologyTestDriver`, () => {
  it('prints exactly the checked-in golden outputs (describe() text and every output record)', async (ctx) => {
    let result: Awaited<ReturnType<typeof runJavaGolden>>
    try {
      result = await runJavaGolden()
    } catch (e) {
      ctx.skip(peerUnavailable('Kafka Streams (Java)', e))
      return
    }
    recordPeer('Java client', kafkaLibsVersion(result.libs))
    const java = JSON.parse(result.stdout) as { kafkaStreamsVersion: string; topologies: object }
    const golden = JSON.parse(readFileSync(GOLDEN, 'utf8')) as typeof java
    expect(java.kafkaStreamsVersion).toBe(STREAMS_VERSION)
    expect(java).toEqual(golden)
  })

  it('prints exactly the checked-in join golden outputs (JoinTopologies.java: every join kind)', async (ctx) => {
    let result: Awaited<ReturnType<typeof runJavaJoinGolden>>
    try {
      result = await runJavaJoinGolden()
    } catch (e) {
      ctx.skip(peerUnavailable('Kafka Streams (Java)', e))
      return
    }
    const java = JSON.parse(result.stdout) as { kafkaStreamsVersion: string; topologies: object }
    expect(java.kafkaStreamsVersion).toBe(STREAMS_VERSION)
    expect(java).toEqual(JSON.parse(readFileSync(JOIN_GOLDEN, 'utf8')))
  })
})
