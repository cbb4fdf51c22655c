/**
 * DescribeClientQuotas (48) and AlterClientQuotas (49) over a real socket, v0 and v1
 * (flexible): Kafka's filters (exact, default, any; strict), its INVALID_REQUEST messages,
 * validate_only, durability across a restart, and ApiVersions advertising both.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { ApiKeys, ErrorCodes } from '@tidelog/protocol'
import { type Broker, startBroker } from '../src/index.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'

const open: { broker: Broker; client: RawClient }[] = []
afterEach(async () => {
  for (const o of open.splice(0)) {
    o.client.close()
    await o.broker.close()
  }
})

async function start(dataDir = tempDir()) {
  const broker = await startBroker({ port: 0, dataDir })
  const client = await RawClient.connect(broker.port)
  open.push({ broker, client })
  return { broker, client, dataDir }
}

type Pairs = [string, string | null][]
const entity = (pairs: Pairs) => pairs.map(([entityType, entityName]) => ({ entityType, entityName }))
const alter = (c: RawClient, v: number, entries: { entity: Pairs; ops: [string, number | null][] }[], validateOnly = false) =>
  c
    .request(ApiKeys.AlterClientQuotas, v, {
      entries: entries.map((e) => ({ entity: entity(e.entity), ops: e.ops.map(([key, value]) => ({ key, value: value ?? 0, remove: value === null })) })),
      validateOnly,
    })
    .then((r) => r.entries as { errorCode: number; errorMessage: string | null; entity: { entityType: string; entityName: string | null }[] }[])
const describeQuotas = (c: RawClient, v: number, components: [string, number, string | null][], strict = false) =>
  c
    .request(ApiKeys.DescribeClientQuotas, v, { components: components.map(([entityType, matchType, match]) => ({ entityType, matchType, match })), strict })
    .then((r) => r as { errorCode: number; errorMessage: string | null; entries: { entity: { entityType: string; entityName: string | null }[]; values: { key: string; value: number }[] }[] | null })
const EXACT = 0
const DEFAULT = 1
const ANY = 2

const sorted = (entries: { entity: { entityType: string; entityName: string | null }[]; values: { key: string; value: number }[] }[] | null) =>
  (entries ?? []).map((e) => ({ entity: e.entity.map((x) => `${x.entityType}=${x.entityName ?? '<default>'}`).join(','), values: Object.fromEntries(e.values.map((v) => [v.key, v.value])) })).sort((a, b) => (a.entity < b.entity ? -1 : 1))

describe('client quota APIs', () => {
  it('ApiVersions advertises DescribeClientQuotas and AlterClientQuotas 0-1, as Kafka 4.0', async () => {
    const { client } = await start()
    const body = await client.request(ApiKeys.ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })
    const find = (k: number) => body.apiKeys.find((a: { apiKey: number }) => a.apiKey === k)
    expect(find(ApiKeys.DescribeClientQuotas)).toMatchObject({ minVersion: 0, maxVersion: 1 })
    expect(find(ApiKeys.AlterClientQuotas)).toMatchObject({ minVersion: 0, maxVersion: 1 })
  })

  for (const v of [0, 1]) {
    it(`v${v}: sets, describes with each match type, removes; kept across a restart`, async () => {
      const { broker, client, dataDir } = await start()
      const res = await alter(client, v, [
        { entity: [['user', 'alice']], ops: [['producer_byte_rate', 1024], ['consumer_byte_rate', 2048]] },
        { entity: [['client-id', null]], ops: [['request_percentage', 25.5]] },
        { entity: [['user', 'alice'], ['client-id', 'app']], ops: [['producer_byte_rate', 512]] },
        { entity: [['user', null]], ops: [['controller_mutation_rate', 10]] },
        { entity: [['ip', '127.0.0.1']], ops: [['connection_creation_rate', 30]] },
      ])
      expect(res.map((r) => [r.errorCode, r.errorMessage])).toEqual(new Array(5).fill([ErrorCodes.NONE, null]))
      expect(res[2]!.entity).toEqual(entity([['user', 'alice'], ['client-id', 'app']]))

      // Every user/client entity (no filter, not strict): ip entities too, as Kafka matches all.
      const all = await describeQuotas(client, v, [])
      expect(all.errorCode).toBe(ErrorCodes.NONE)
      expect(sorted(all.entries)).toEqual([
        { entity: 'client-id=<default>', values: { request_percentage: 25.5 } },
        { entity: 'ip=127.0.0.1', values: { connection_creation_rate: 30 } },
        { entity: 'user=<default>', values: { controller_mutation_rate: 10 } },
        { entity: 'user=alice', values: { producer_byte_rate: 1024, consumer_byte_rate: 2048 } },
        { entity: 'user=alice,client-id=app', values: { producer_byte_rate: 512 } },
      ])
      expect(sorted((await describeQuotas(client, v, [['user', EXACT, 'alice']])).entries).map((e) => e.entity)).toEqual(['user=alice', 'user=alice,client-id=app'])
      expect(sorted((await describeQuotas(client, v, [['user', EXACT, 'alice']], true)).entries).map((e) => e.entity)).toEqual(['user=alice'])
      expect(sorted((await describeQuotas(client, v, [['user', DEFAULT, null]])).entries).map((e) => e.entity)).toEqual(['user=<default>'])
      expect(sorted((await describeQuotas(client, v, [['client-id', ANY, null]])).entries).map((e) => e.entity)).toEqual(['client-id=<default>', 'user=alice,client-id=app'])
      expect(sorted((await describeQuotas(client, v, [['ip', ANY, null]], true)).entries).map((e) => e.entity)).toEqual(['ip=127.0.0.1'])

      // Removing a key leaves the others; removing the last drops the entity.
      await alter(client, v, [{ entity: [['user', 'alice']], ops: [['consumer_byte_rate', null]] }, { entity: [['user', null]], ops: [['controller_mutation_rate', null]] }])
      client.close()
      open.pop()
      await broker.close()
      const again = await start(dataDir)
      expect(sorted((await describeQuotas(again.client, v, [['user', ANY, null]], true)).entries)).toEqual([{ entity: 'user=alice', values: { producer_byte_rate: 1024 } }])
    })
  }

  it('bad alterations get INVALID_REQUEST with Kafka\'s message and change nothing; validate_only changes nothing', async () => {
    const { client } = await start()
    const res = await alter(client, 1, [
      { entity: [['user', 'bob']], ops: [['producer_byte_rate', 1.5]] },
      { entity: [['user', 'carol']], ops: [['bogus', 1]] },
      { entity: [['ip', 'x.invalid']], ops: [['connection_creation_rate', 1]] },
      { entity: [], ops: [['producer_byte_rate', 1]] },
      { entity: [['client-id', 'ok']], ops: [['consumer_byte_rate', 100]] },
    ])
    expect(res.map((r) => [r.errorCode, r.errorMessage])).toEqual([
      [ErrorCodes.INVALID_REQUEST, 'producer_byte_rate cannot be a fractional value.'],
      [ErrorCodes.INVALID_REQUEST, 'Invalid configuration key bogus'],
      [ErrorCodes.INVALID_REQUEST, 'x.invalid is not a valid IP or resolvable host.'],
      [ErrorCodes.INVALID_REQUEST, 'Invalid empty client quota entity'],
      [ErrorCodes.NONE, null],
    ])
    const dry = await alter(client, 0, [{ entity: [['user', 'dave']], ops: [['producer_byte_rate', 10]] }], true)
    expect(dry[0]!.errorCode).toBe(ErrorCodes.NONE)
    expect(sorted((await describeQuotas(client, 0, [])).entries).map((e) => e.entity)).toEqual(['client-id=ok'])
  })

  it('a damaged or newer quotas file stops startup instead of starting without its quotas', async () => {
    const dir = tempDir()
    writeFileSync(join(dir, 'client-quotas.json'), '{ not json')
    await expect(startBroker({ port: 0, dataDir: dir })).rejects.toThrow(/client-quotas.json is not valid JSON/)
    writeFileSync(join(dir, 'client-quotas.json'), JSON.stringify({ version: 9, quotas: [] }))
    await expect(startBroker({ port: 0, dataDir: dir })).rejects.toThrow(/format version 9/)
    writeFileSync(join(dir, 'client-quotas.json'), JSON.stringify({ version: 1, quotas: [{ entity: { user: 'a' }, values: { bogus: 1 } }] }))
    await expect(startBroker({ port: 0, dataDir: dir })).rejects.toThrow(/Invalid configuration key bogus/)
  })

  it('bad filters get Kafka\'s errors', async () => {
    const { client } = await start()
    const cases: [[string, number, string | null][], number, string][] = [
      [[['', EXACT, 'a']], ErrorCodes.INVALID_REQUEST, 'Invalid empty entity type.'],
      [[['user', EXACT, 'a'], ['user', ANY, null]], ErrorCodes.INVALID_REQUEST, 'Entity type user cannot appear more than once in the filter.'],
      [[['group', EXACT, 'a']], ErrorCodes.UNSUPPORTED_VERSION, 'Unsupported entity type group'],
      [[['user', EXACT, null]], ErrorCodes.INVALID_REQUEST, 'Request specified MATCH_TYPE_EXACT, but set match string to null.'],
      [[['user', DEFAULT, 'x']], ErrorCodes.INVALID_REQUEST, 'Request specified MATCH_TYPE_DEFAULT, but also specified a match string.'],
      [[['user', ANY, 'x']], ErrorCodes.INVALID_REQUEST, 'Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.'],
      [[['user', 7, null]], ErrorCodes.INVALID_REQUEST, 'Unknown match type 7'],
      [[['ip', ANY, null], ['user', ANY, null]], ErrorCodes.INVALID_REQUEST, 'Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.'],
    ]
    for (const [components, code, message] of cases) {
      const r = await describeQuotas(client, 1, components)
      expect([r.errorCode, r.errorMessage, r.entries]).toEqual([code, message, null])
    }
  })
})
