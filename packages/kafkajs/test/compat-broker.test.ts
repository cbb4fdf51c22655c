import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as real from 'kafkajs'
import { startBroker } from '@tidelog/broker'
import * as ours from '@tidelog/kafkajs'
import { describe, expect, it } from 'vitest'
import { cleanup, startTestBroker } from '../../consumer/test/helpers/broker.js'
import { aclsProgram } from '../../../test/kafkajs-compat/acls.js'
import { adminProgram } from '../../../test/kafkajs-compat/admin.js'
import { consumerProgram } from '../../../test/kafkajs-compat/consumer.js'
import { eventsProgram } from '../../../test/kafkajs-compat/events.js'
import { producerProgram } from '../../../test/kafkajs-compat/producer.js'
import type { KafkaModule } from '../../../test/kafkajs-compat/types.js'

const tidelog = ours as unknown as KafkaModule

// The programs of test/kafkajs-compat, run with real kafkajs 2.2.4 and with @tidelog/kafkajs,
// each on a fresh in-process broker: what each observes must be the same. (One broker per run:
// the broker takes its log directory offline when a topic is deleted while its producer-state
// snapshot is written, which the programs' final deleteTopics can hit; a broker issue.)
async function both<T>(program: (lib: KafkaModule, brokers: string[], prefix: string) => Promise<T>): Promise<[T, T]> {
  const expected = await program(real, (await startTestBroker(1)).brokers, 'real')
  const actual = await program(tidelog, (await startTestBroker(1)).brokers, 'ours')
  return [actual, expected]
}
// ACLs on: Kafka's StandardAuthorizer with the unauthenticated principal as super user, so the
// program may do everything while the broker still checks and stores ACLs.
async function authorizingBroker(): Promise<string[]> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tidelog-kafkajs-acls-'))
  const broker = await startBroker({ port: 0, dataDir, authorizerClassName: 'org.apache.kafka.metadata.authorizer.StandardAuthorizer', superUsers: 'User:ANONYMOUS', logLevel: 'warn' })
  cleanup(async () => {
    await broker.close()
    rmSync(dataDir, { recursive: true, force: true })
  })
  return [`127.0.0.1:${broker.port}`]
}

describe('kafkajs programs on our broker: kafkajs 2.2.4 and @tidelog/kafkajs observe the same', () => {
  it('producer: send, sendBatch, partitioners, headers, validation', async () => {
    const [actual, expected] = await both(producerProgram)
    expect(actual).toEqual(expected)
    if (process.env.SHOW) console.log(JSON.stringify(actual))
  })

  it('consumer: eachMessage, eachBatch with resolveOffset, seek, commitOffsets, pause, events', async () => {
    const [actual, expected] = await both(consumerProgram)
    if (process.env.SHOW) console.log(JSON.stringify(actual), JSON.stringify(expected))
    expect(actual).toEqual(expected)
  })

  it('instrumentation events: kinds, payload shapes, times and the order of the deterministic ones', async () => {
    const [actual, expected] = await both(eventsProgram)
    if (process.env.SHOW) console.log(JSON.stringify(actual, null, 1), JSON.stringify(expected, null, 1))
    expect(actual).toEqual(expected)
  })

  it('admin ACLs: createAcls, describeAcls, deleteAcls with kafkajs enums, argument checks and broker refusals', async () => {
    const expected = await aclsProgram(real, await authorizingBroker(), 'real')
    const actual = await aclsProgram(tidelog, await authorizingBroker(), 'ours')
    if (process.env.SHOW) console.log(JSON.stringify(actual, null, 1), JSON.stringify(expected, null, 1))
    expect(actual).toEqual(expected)
    // Without an authorizer the broker answers SECURITY_DISABLED; both throw it the same way.
    const { brokers } = await startTestBroker(1)
    const refusal = async (lib: KafkaModule) => {
      const admin = new lib.Kafka({ brokers, logLevel: lib.logLevel.NOTHING }).admin()
      await admin.connect()
      const acl = { resourceType: lib.AclResourceTypes.TOPIC, resourceName: 't', resourcePatternType: lib.ResourcePatternTypes.LITERAL, principal: 'User:a', host: '*', operation: lib.AclOperationTypes.READ, permissionType: lib.AclPermissionTypes.ALLOW }
      const e = await admin.createAcls({ acl: [acl] }).then(() => undefined, (x: { name: string; type: string; message: string; retriable: boolean }) => ({ name: x.name, type: x.type, message: x.message, retriable: x.retriable }))
      await admin.disconnect()
      return e
    }
    const ourRefusal = await refusal(tidelog)
    expect(ourRefusal).toEqual(await refusal(real))
    expect(ourRefusal?.type).toBe('SECURITY_DISABLED')
  })

  it('admin: topics, partitions, offsets, configs, groups, records, cluster', async () => {
    const [actual, expected] = await both(adminProgram)
    if (process.env.SHOW) console.log(JSON.stringify(actual))
    expect(actual).toEqual(expected)
  })
})
