/**
 * `tidelog users list | set | delete` over the Admin's SCRAM methods (KIP-554): a user set here
 * logs in over SASL SCRAM, is listed with its mechanisms and iterations, and is locked out once
 * deleted; Kafka's per-user errors exit 1 with their names, bad command lines exit 2.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Broker, startBroker } from '@tidelog/broker'
import { ensureBuilt, inProcess } from './helpers.js'

let broker: Broker
let dir: string
const plain = () => ['-b', `127.0.0.1:${broker.listeners[0]!.port}`]
const scram = (user: string, password: string, mechanism: string) => ['-b', `127.0.0.1:${broker.listeners[1]!.port}`, '--sasl-mechanism', mechanism, '--sasl-username', user, '--sasl-password', password]
const rows = (out: string) => out.trim().split('\n').map((l) => l.split(/\s+/))

beforeAll(async () => {
  ensureBuilt()
  dir = mkdtempSync(join(tmpdir(), 'tidelog-cli-users-'))
  broker = await startBroker({
    dataDir: join(dir, 'data'),
    listeners: 'PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0',
    connectionFailedAuthenticationDelayMs: 0,
    logLevel: 'error',
  })
})

afterAll(async () => {
  await broker?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('tidelog users', () => {
  it('sets, lists and deletes SCRAM users, who log in over SASL until deleted', async () => {
    const set = await inProcess(['users', 'set', '--user', 'alice', '--mechanism', 'SCRAM-SHA-256', '--mechanism', 'scram-sha-512', '--password', 'alice-pw', '--iterations', '8192', ...plain()])
    expect(set).toMatchObject({ code: 0, stderr: "Set alice's SCRAM-SHA-256, SCRAM-SHA-512 credential.\n" })
    expect(rows((await inProcess(['users', 'list', ...plain()])).stdout)).toEqual([
      ['USER', 'MECHANISM', 'ITERATIONS'],
      ['alice', 'SCRAM-SHA-256', '8192'],
      ['alice', 'SCRAM-SHA-512', '8192'],
    ])
    expect((await inProcess(['topics', 'list', ...scram('alice', 'alice-pw', 'SCRAM-SHA-512')])).code).toBe(0)
    expect(await inProcess(['users', 'delete', '--user', 'alice', '--mechanism', 'SCRAM-SHA-512', ...plain()])).toMatchObject({ code: 0 })
    const json = JSON.parse((await inProcess(['users', 'list', '--user', 'alice', '--json', ...plain()])).stdout)
    expect(json).toEqual([{ name: 'alice', credentialInfos: [{ mechanism: 'SCRAM-SHA-256', iterations: 8192 }] }])
    const locked = await inProcess(['topics', 'list', ...scram('alice', 'alice-pw', 'SCRAM-SHA-512')])
    // The CLI's exit code for a TLS or SASL failure.
    expect(locked.code).toBe(3)
    expect(locked.stderr).toMatch(/SASL SCRAM-SHA-512 authentication .* failed/)
  })

  it('exits 1 with Kafka\'s per-user error, and 2 on a bad command line', async () => {
    const unknown = await inProcess(['users', 'list', '--user', 'nobody', ...plain()])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toMatch(/RESOURCE_NOT_FOUND/)
    const few = await inProcess(['users', 'set', '--user', 'bob', '--mechanism', 'SCRAM-SHA-256', '--password', 'x', '--iterations', '100', ...plain()])
    expect(few.code).toBe(1)
    expect(few.stderr).toMatch(/UNACCEPTABLE_CREDENTIAL.*Too few iterations/)
    for (const args of [['users', 'set', '--user', 'bob', '--password', 'x'], ['users', 'set', '--user', 'bob', '--mechanism', 'MD5', '--password', 'x'], ['users', 'delete', '--mechanism', 'SCRAM-SHA-256']]) {
      expect((await inProcess([...args, ...plain()])).code, args.join(' ')).toBe(2)
    }
  })
})
