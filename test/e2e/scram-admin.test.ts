/**
 * SCRAM users through our Admin (Java Admin's describeUserScramCredentials /
 * alterUserScramCredentials shapes, KIP-554): a user created by the Admin logs a producer in
 * over SASL SCRAM, deleting the credential locks it out, and each of Kafka's per-user errors
 * comes back typed, naming the user, without touching the users that were fine.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Broker, startBroker } from '@tidelog/broker'
import { Admin, AdminError, SaslAuthenticationError, UserScramCredentialError } from '@tidelog/client'
import { Producer } from '@tidelog/producer'
import { ErrorCodes, scramKeysSync } from '@tidelog/protocol'
import { randomScramSalt, saltedPassword } from '../../packages/client/src/admin/scram.js'

let dir: string
let broker: Broker
let plain: number
let sasl: number
const open: { close(): Promise<void> }[] = []
const as = <T extends { close(): Promise<void> }>(c: T): T => {
  open.push(c)
  return c
}
const scramLogin = (user: string, password: string, mechanism: 'SCRAM-SHA-256' | 'SCRAM-SHA-512') => ({
  brokers: [`127.0.0.1:${sasl}`],
  clientId: `scram-${user}`,
  sasl: { mechanism, username: user, password },
})
async function userErrors(p: Promise<unknown>): Promise<{ user: string; type: string; message: string }[]> {
  const e = await p.then(() => undefined, (err: unknown) => err)
  if (!(e instanceof AdminError)) throw new Error(`expected an AdminError, got ${String(e)}`)
  return e.errors.map((x) => {
    if (!(x instanceof UserScramCredentialError)) throw new Error(`expected a UserScramCredentialError, got ${String(x)}`)
    return { user: x.user, type: x.type, message: x.message }
  })
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tidelog-scram-admin-'))
  broker = await startBroker({
    dataDir: join(dir, 'data'),
    listeners: 'PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0',
    connectionFailedAuthenticationDelayMs: 0,
    logLevel: 'error',
  })
  plain = broker.listeners[0]!.port
  sasl = broker.listeners[1]!.port
})

afterAll(async () => {
  for (const c of open.splice(0).reverse()) await c.close().catch(() => {})
  await broker?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('Admin SCRAM users', () => {
  it('salts as Java does: Hi() of RFC 5802 and a base-36 salt of 130 random bits', async () => {
    const salt = Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64')
    // PBKDF2-HMAC-SHA-256 with the hash's output length, the RFC 7677 example's inputs.
    expect(Buffer.from(await saltedPassword('SCRAM-SHA-256', 'pencil', salt, 4096))).toEqual(scramKeysSync('sha256', 'pencil', salt, 4096).salted)
    expect((await saltedPassword('SCRAM-SHA-512', 'pencil', salt, 4096)).length).toBe(64)
    const salts = Array.from({ length: 50 }, () => Buffer.from(randomScramSalt()).toString('utf8'))
    for (const s of salts) expect(s).toMatch(/^[0-9a-z]{1,26}$/)
    expect(new Set(salts).size).toBe(50)
  })

  it('creates a user the producer logs in with, describes it, and deleting it locks the producer out', async () => {
    const admin = as(new Admin({ brokers: [`127.0.0.1:${plain}`] }))
    const changed = await admin.alterUserScramCredentials([
      { user: 'alice', credentialInfo: { mechanism: 'SCRAM-SHA-256', iterations: 8192 }, password: 'alice-secret' },
      { user: 'alice', credentialInfo: { mechanism: 'SCRAM-SHA-512', iterations: 4096 }, password: 'alice-secret-512' },
      { user: 'bob', credentialInfo: { mechanism: 'SCRAM-SHA-512', iterations: 4096 }, password: 'bob-secret', salt: Buffer.from('fixed-salt') },
    ])
    expect(changed.sort()).toEqual(['alice', 'bob'])
    const all = await admin.describeUserScramCredentials()
    expect(all.map((d) => ({ ...d, credentialInfos: [...d.credentialInfos].sort((a, b) => a.mechanism.localeCompare(b.mechanism)) })).sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      { name: 'alice', credentialInfos: [{ mechanism: 'SCRAM-SHA-256', iterations: 8192 }, { mechanism: 'SCRAM-SHA-512', iterations: 4096 }] },
      { name: 'bob', credentialInfos: [{ mechanism: 'SCRAM-SHA-512', iterations: 4096 }] },
    ])
    expect(await admin.describeUserScramCredentials(['bob'])).toEqual([{ name: 'bob', credentialInfos: [{ mechanism: 'SCRAM-SHA-512', iterations: 4096 }] }])
    await admin.createTopics([{ name: 'scram-t', partitions: 1 }])

    for (const [mechanism, password] of [['SCRAM-SHA-256', 'alice-secret'], ['SCRAM-SHA-512', 'alice-secret-512']] as const) {
      const producer = as(new Producer({ ...scramLogin('alice', password, mechanism), acks: 1 }))
      const meta = await producer.send({ topic: 'scram-t', value: Buffer.from(mechanism) })
      expect(meta.topic).toBe('scram-t')
      await producer.close()
    }
    const wrong = as(new Producer({ ...scramLogin('alice', 'not-it', 'SCRAM-SHA-256'), acks: 1 }))
    await expect(wrong.connect()).rejects.toBeInstanceOf(SaslAuthenticationError)

    await admin.alterUserScramCredentials([{ user: 'alice', mechanism: 'SCRAM-SHA-256' }])
    expect(await admin.describeUserScramCredentials(['alice'])).toEqual([{ name: 'alice', credentialInfos: [{ mechanism: 'SCRAM-SHA-512', iterations: 4096 }] }])
    const locked = as(new Producer({ ...scramLogin('alice', 'alice-secret', 'SCRAM-SHA-256'), acks: 1 }))
    const err = await locked.connect().then(() => undefined, (e: unknown) => e)
    expect(err).toBeInstanceOf(SaslAuthenticationError)
    expect((err as SaslAuthenticationError).code).toBe(ErrorCodes.SASL_AUTHENTICATION_FAILED)
    // The other mechanism's credential is untouched.
    const still = as(new Producer({ ...scramLogin('alice', 'alice-secret-512', 'SCRAM-SHA-512'), acks: 1 }))
    await still.connect()
  })

  it('gives each user Kafka\'s error, typed and naming the user, and applies the rest', async () => {
    const admin = as(new Admin({ brokers: [`127.0.0.1:${plain}`] }))
    expect(await userErrors(admin.describeUserScramCredentials(['nobody', 'bob']))).toEqual([
      { user: 'nobody', type: 'RESOURCE_NOT_FOUND', message: expect.stringContaining('Attempt to describe a user credential that does not exist: nobody') },
    ])
    const partial = await admin.describeUserScramCredentials(['nobody', 'bob']).catch((e: AdminError<unknown>) => e.results)
    expect(partial).toEqual([{ name: 'bob', credentialInfos: [{ mechanism: 'SCRAM-SHA-512', iterations: 4096 }] }])
    expect((await userErrors(admin.describeUserScramCredentials(['bob', 'bob'])))[0]).toMatchObject({ user: 'bob', type: 'DUPLICATE_RESOURCE' })

    const errors = await userErrors(
      admin.alterUserScramCredentials([
        { user: 'carol', credentialInfo: { mechanism: 'SCRAM-SHA-256', iterations: 1000 }, password: 'pw' },
        { user: 'dave', mechanism: 'SCRAM-SHA-256' },
        { user: 'erin', credentialInfo: { mechanism: 'SCRAM-SHA-256', iterations: 4096 }, password: 'a' },
        { user: 'erin', credentialInfo: { mechanism: 'SCRAM-SHA-256', iterations: 4096 }, password: 'b' },
        { user: 'frank', credentialInfo: { mechanism: 'SCRAM-SHA-256', iterations: 4096 }, password: '' },
        { user: '', mechanism: 'SCRAM-SHA-512' },
        { user: 'gina', mechanism: 'SCRAM-SHA-1' as 'SCRAM-SHA-256' },
        { user: 'ok', credentialInfo: { mechanism: 'SCRAM-SHA-256', iterations: 4096 }, password: 'fine' },
      ]).catch((e: AdminError<string>) => {
        expect(e.results).toEqual(['ok'])
        throw e
      }),
    )
    const byUser = Object.fromEntries(errors.map((e) => [e.user, e]))
    expect(Object.keys(byUser).sort()).toEqual(['', 'carol', 'dave', 'erin', 'frank', 'gina'])
    expect(byUser.carol).toMatchObject({ type: 'UNACCEPTABLE_CREDENTIAL', message: expect.stringContaining('Too few iterations') })
    expect(byUser.dave).toMatchObject({ type: 'RESOURCE_NOT_FOUND' })
    expect(byUser.erin).toMatchObject({ type: 'DUPLICATE_RESOURCE' })
    // Checked before sending, as Java's KafkaAdminClient does, with its messages.
    expect(byUser.frank).toMatchObject({ type: 'UNACCEPTABLE_CREDENTIAL', message: expect.stringContaining('Password must not be empty') })
    expect(byUser['']).toMatchObject({ type: 'UNACCEPTABLE_CREDENTIAL', message: expect.stringContaining('Username must not be empty') })
    expect(byUser.gina).toMatchObject({ type: 'UNSUPPORTED_SASL_MECHANISM', message: expect.stringContaining('Unknown SCRAM mechanism') })
    const names = (await admin.describeUserScramCredentials()).map((d) => d.name).sort()
    expect(names).toEqual(['alice', 'bob', 'ok'])
  })

  it('keeps the users across a restart (the broker stores them in its data dir)', async () => {
    await broker.close()
    broker = await startBroker({ dataDir: join(dir, 'data'), listeners: 'PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0', connectionFailedAuthenticationDelayMs: 0, logLevel: 'error' })
    plain = broker.listeners[0]!.port
    sasl = broker.listeners[1]!.port
    const admin = as(new Admin({ brokers: [`127.0.0.1:${plain}`] }))
    expect((await admin.describeUserScramCredentials(['ok']))[0]!.credentialInfos).toEqual([{ mechanism: 'SCRAM-SHA-256', iterations: 4096 }])
    const producer = as(new Producer({ ...scramLogin('ok', 'fine', 'SCRAM-SHA-256'), acks: 1 }))
    await producer.connect()
  })
})
