import { readFileSync } from 'node:fs'
import { beforeAll, describe, expect, it } from 'vitest'
import { peerUnavailable } from '../helpers/kafka.js'
import { kafkaLibsVersion, recordPeer } from '../helpers/peers.js'
import { GOLDEN, JOIN_GOLDEN, runJavaGolden, runJavaJoinGolden, STREAMS_VERSION } from '../streams-java/golden.js'
import { runJavaWindows, WINDOWS2_GOLDEN, WINDOWS_GOLDEN } from '../streams-java/windows.js'

/**
 * The golden outputs packages/streams/test/golden.test.ts holds our TopologyTestDriver to are
 * what Kafka Streams' own TopologyTestDriver prints today: GoldenTopologies.java is compiled
 * and run again here (no broker; one JVM, ~10 s once the jars are cached).
 */
describe(`Kafka Streams ${STREAMS_VERSION} TopologyTestDriver`, () => {
  // The window program's JVMs start with the first test's, so its extra wall time stays small.
  let windows: Promise<Awaited<ReturnType<typeof runJavaWindows>>> | undefined
  beforeAll(() => {
    windows = runJavaWindows()
    windows.catch(() => {})
  })
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

  it('prints exactly the checked-in window, suppress and stream-join golden outputs (WindowTopologies.java)', async (ctx) => {
    let result: Awaited<ReturnType<typeof runJavaWindows>>
    try {
      result = await windows!
    } catch (e) {
      ctx.skip(peerUnavailable('Kafka Streams (Java)', e))
      return
    }
    const java = JSON.parse(result.stdout) as { kafkaStreamsVersion: string; topologies: object }
    const golden = JSON.parse(readFileSync(WINDOWS_GOLDEN, 'utf8')) as typeof java
    expect(java.kafkaStreamsVersion).toBe(STREAMS_VERSION)
    expect(java).toEqual(golden)
  })

  it('prints exactly the checked-in withRetention, emit-strategy and cogroup golden outputs (MoreWindowTopologies.java)', async (ctx) => {
    let result: Awaited<ReturnType<typeof runJavaWindows>>
    try {
      result = await windows!
    } catch (e) {
      ctx.skip(peerUnavailable('Kafka Streams (Java)', e))
      return
    }
    const java = JSON.parse(result.stdout2) as { kafkaStreamsVersion: string; topologies: object }
    expect(java.kafkaStreamsVersion).toBe(STREAMS_VERSION)
    expect(java).toEqual(JSON.parse(readFileSync(WINDOWS2_GOLDEN, 'utf8')))
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
