/**
 * kafka-python and librdkafka infer the broker's release from the ApiVersions
 * ranges and switch features by that guess, so every range the broker advertises
 * must top out exactly where the release it presents as (Apache Kafka 3.9) does.
 * The reference is ApiVersions as Kafka 3.9.1 itself answered it (a golden fixture
 * captured by test/interop/codec-kafka.test.ts).
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import { ApiKeys, Reader, getApi, type ApiVersionsResponse } from '@tidelog/protocol'
import { advertisedVersions, createRegistry } from '../apps/broker/src/handlers/index.js'

const fixture = fileURLToPath(new URL('../packages/protocol/test/golden/kafka/3.9.1/ApiVersions-v3-response.hex', import.meta.url))

it('every API the broker advertises has Apache Kafka 3.9 maximum version', () => {
  const hex = readFileSync(fixture, 'utf8').split('\n').filter((l) => !l.startsWith('#')).join('')
  const kafka: ApiVersionsResponse = getApi(ApiKeys.ApiVersions)!.decodeResponse(new Reader(Buffer.from(hex, 'hex')), 3)
  const kafkaRanges = new Map(kafka.apiKeys.map((k) => [k.apiKey, k]))
  const ours = advertisedVersions(createRegistry())
  expect(ours.length).toBeGreaterThanOrEqual(20)
  for (const api of ours) {
    const theirs = kafkaRanges.get(api.apiKey)
    const name = getApi(api.apiKey)?.name ?? String(api.apiKey)
    expect(theirs, `${name} is not served by Kafka 3.9`).toBeDefined()
    expect(api.maxVersion, `${name} max`).toBe(theirs!.maxVersion)
    expect(api.minVersion, `${name} min`).toBeGreaterThanOrEqual(theirs!.minVersion)
  }
})
