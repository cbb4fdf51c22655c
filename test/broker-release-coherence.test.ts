/**
 * kafka-python and librdkafka infer the broker's release from the ApiVersions ranges
 * and switch features by that guess, and Java 4.x clients switch transaction protocols
 * by the finalized features, so the broker presents one release coherently: Apache
 * Kafka 4.0, the first with Produce v12 and EndTxn v5 (KIP-890). The reference is
 * ApiVersions as Kafka 4.0.2 itself answered it (golden fixtures captured by
 * test/interop/capture-api-versions.ts).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ApiKeys, Reader, getApi, type ApiVersionsResponse } from '@tidelog/protocol'
import { startBroker, type Broker } from '@tidelog/broker'
import { advertisedVersions, createRegistry } from '../apps/broker/src/handlers/index.js'
import { RawClient } from './helpers/raw-client.js'

const RELEASE = '4.0.2'

function golden(version: number, release = RELEASE): ApiVersionsResponse {
  const file = fileURLToPath(new URL(`../packages/protocol/test/golden/kafka/${release}/ApiVersions-v${version}-response.hex`, import.meta.url))
  const hex = readFileSync(file, 'utf8').split('\n').filter((l) => !l.startsWith('#')).join('')
  return getApi(ApiKeys.ApiVersions)!.decodeResponse(new Reader(Buffer.from(hex, 'hex')), version)
}

const ours = advertisedVersions(createRegistry())
const maxOf = (key: number) => ours.find((a) => a.apiKey === key)?.maxVersion ?? -1
const servesTv2 = maxOf(ApiKeys.EndTxn) >= 5

/**
 * The APIs still below 4.0's maximum, each with what is missing. An entry whose gap has
 * closed fails the test, so this list only shrinks.
 */
const BELOW_4_0 = new Map<number, string>([
  [ApiKeys.Metadata, 'v13 (top-level error code, KIP-1102 rebootstrap) is not in the codec'],
  [ApiKeys.DescribeGroups, 'v6 (GROUP_ID_NOT_FOUND for unknown groups, KIP-1043) is not in the codec'],
  [ApiKeys.DescribeCluster, 'v2 (IncludeFencedBrokers / IsFenced, KIP-1073) is not in the codec'],
])
/**
 * KIP-932 share groups are not in 4.0 (its share APIs were unreleased); they are served as
 * Kafka 4.4.0 serves them (4.4.0's captured answer), at or below its maximum, and come with
 * share.version finalized, as Kafka lists them only then.
 */
const SHARE_RELEASE = '4.4.0'
const SHARE_APIS: readonly number[] = [ApiKeys.ShareGroupHeartbeat, ApiKeys.ShareGroupDescribe, ApiKeys.ShareFetch, ApiKeys.ShareAcknowledge]
/**
 * Also served as Kafka 4.4.0 serves it: ListConfigResources v1 (KIP-1142, Kafka 4.1; 4.0 had only
 * v0, ListClientMetricsResources), which Kafka 4.4's kafka-configs.sh and kafka-client-metrics.sh ask for.
 */
const LATER_APIS: readonly number[] = [...SHARE_APIS, ApiKeys.ListConfigResources]
// Produce v12 means transaction version 2; it comes with EndTxn v5 or not at all.
if (!servesTv2) BELOW_4_0.set(ApiKeys.Produce, 'v12 is served with EndTxn v5 (transaction.version 2), not before')

describe(`the broker presents as Apache Kafka ${RELEASE}`, () => {
  it('every API the broker advertises tops out at Kafka 4.0\'s maximum and starts at or above its minimum', () => {
    const kafkaRanges = new Map(golden(3).apiKeys.map((k) => [k.apiKey, k]))
    expect(ours.length).toBeGreaterThanOrEqual(20)
    for (const api of ours) {
      if (LATER_APIS.includes(api.apiKey)) continue
      const theirs = kafkaRanges.get(api.apiKey)
      const name = getApi(api.apiKey)?.name ?? String(api.apiKey)
      expect(theirs, `${name} is not served by Kafka ${RELEASE}`).toBeDefined()
      expect(api.minVersion, `${name} min`).toBeGreaterThanOrEqual(theirs!.minVersion)
      const gap = BELOW_4_0.get(api.apiKey)
      if (gap === undefined) {
        expect(api.maxVersion, `${name} max`).toBe(theirs!.maxVersion)
      } else {
        expect(api.maxVersion, `${name} reached ${theirs!.maxVersion}: remove it from BELOW_4_0 (${gap})`).toBeLessThan(theirs!.maxVersion)
        expect(api.maxVersion, `${name} max`).toBeGreaterThanOrEqual(theirs!.minVersion)
      }
    }
    for (const key of BELOW_4_0.keys()) expect(maxOf(key), `${getApi(key)?.name} is listed in BELOW_4_0 but not served`).toBeGreaterThan(-1)
  })

  it(`the KIP-932 share-group APIs and ListConfigResources are served as Kafka ${SHARE_RELEASE} serves them`, () => {
    const kafkaRanges = new Map(golden(3, SHARE_RELEASE).apiKeys.map((k) => [k.apiKey, k]))
    for (const key of LATER_APIS) {
      const name = getApi(key)!.name
      const api = ours.find((a) => a.apiKey === key)
      expect(api, `${name} served`).toBeDefined()
      expect(api!.minVersion, `${name} min`).toBe(kafkaRanges.get(key)!.minVersion)
      expect(api!.maxVersion, `${name} max`).toBeLessThanOrEqual(kafkaRanges.get(key)!.maxVersion)
    }
  })

  it('Produce v12 and EndTxn v5 are served together or not at all (KIP-890)', () => {
    expect(maxOf(ApiKeys.Produce) >= 12).toBe(servesTv2)
  })

  describe('features over the wire', () => {
    let broker: Broker
    let client: RawClient
    let dataDir: string
    beforeAll(async () => {
      dataDir = mkdtempSync(join(tmpdir(), 'tidelog-coherence-'))
      broker = await startBroker({ port: 0, dataDir })
      client = await RawClient.connect('127.0.0.1', broker.port)
    })
    afterAll(async () => {
      client?.close()
      await broker?.close()
      rmSync(dataDir, { recursive: true, force: true })
    })

    const ask = async (v: number) =>
      (await client.request<ApiVersionsResponse>(ApiKeys.ApiVersions, v, { clientSoftwareName: 'coherence', clientSoftwareVersion: '1' })).body

    it.each([3, 4])('ApiVersions v%i: metadata.version as Kafka 4.0.2, transaction.version 2 exactly when EndTxn v5 is served', async (v) => {
      const kafka = golden(v)
      const body = await ask(v)
      expect(body.errorCode).toBe(0)
      const supported = new Map((body.supportedFeatures ?? []).map((f) => [f.name, f]))
      const finalized = new Map((body.finalizedFeatures ?? []).map((f) => [f.name, f]))
      const kafkaSupported = new Map((kafka.supportedFeatures ?? []).map((f) => [f.name, f]))
      const kafkaFinalized = new Map((kafka.finalizedFeatures ?? []).map((f) => [f.name, f]))

      expect(supported.get('metadata.version')).toEqual(kafkaSupported.get('metadata.version'))
      expect(finalized.get('metadata.version')).toEqual(kafkaFinalized.get('metadata.version'))
      if (servesTv2) {
        expect(finalized.get('transaction.version')).toEqual(kafkaFinalized.get('transaction.version'))
        expect(finalized.get('transaction.version')?.maxVersionLevel).toBe(2)
        // KIP-1022: a range starting at 0 appears from v4 only, as Kafka sends it.
        expect(supported.get('transaction.version')).toEqual(kafkaSupported.get('transaction.version'))
      } else {
        expect(finalized.has('transaction.version')).toBe(false)
        expect(supported.has('transaction.version')).toBe(false)
      }
      // share.version comes with the share APIs, at or below Kafka 4.4.0's level.
      const shareKafka = golden(v, SHARE_RELEASE)
      const shareFinalized = shareKafka.finalizedFeatures?.find((f) => f.name === 'share.version')
      expect(finalized.get('share.version')?.maxVersionLevel).toBe(1)
      expect(finalized.get('share.version')!.maxVersionLevel).toBeLessThanOrEqual(shareFinalized!.maxVersionLevel)
      if (v >= 4) expect(supported.get('share.version')).toEqual({ name: 'share.version', minVersion: 0, maxVersion: 1 })
      finalized.delete('share.version')
      supported.delete('share.version')
      // Nothing else is claimed that Kafka 4.0.2 does not have, nor above its level.
      for (const [name, f] of finalized) {
        expect(kafkaFinalized.get(name), name).toBeDefined()
        expect(f.maxVersionLevel, name).toBeLessThanOrEqual(kafkaFinalized.get(name)!.maxVersionLevel)
      }
      for (const [name, f] of supported) {
        expect(kafkaSupported.get(name), name).toBeDefined()
        expect(f.maxVersion, name).toBeLessThanOrEqual(kafkaSupported.get(name)!.maxVersion)
        if (v < 4) expect(f.minVersion, name).toBeGreaterThan(0)
      }
      // Java's client keeps the finalized features of the highest epoch it saw, from -1 up.
      expect(body.finalizedFeaturesEpoch).toBeGreaterThan(-1n)
    })

    it('ApiVersions v0-v2 carry no features, and the answer is the same on every call', async () => {
      for (const v of [0, 1, 2]) {
        const body = await ask(v)
        expect(body.supportedFeatures ?? []).toEqual([])
        expect(body.finalizedFeatures ?? []).toEqual([])
      }
      expect(await ask(4)).toEqual(await ask(4))
    })
  })
})
