/**
 * `tidelog acls list | create | delete` over the Admin client's CreateAcls, DescribeAcls and
 * DeleteAcls, against a broker with StandardAuthorizer and a SASL listener: what is created is
 * listed, enforced (a user without READ is refused, then served once granted) and removed.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Broker, startBroker } from '@tidelog/broker'
import { ensureBuilt, inProcess, tidelog } from './helpers.js'

let broker: Broker
let dir: string
const as = (user: string) => ['-b', `127.0.0.1:${broker.port}`, '--sasl-mechanism', 'PLAIN', '--sasl-username', user, '--sasl-password', `${user}-pw`]
// In-process (no spawn per call: these check the commands' logic; the first test's first
// command runs as a spawned process, as a person runs it).
const admin = (args: string[], input?: string) => inProcess([...args, ...as('admin')], input)
const alice = (args: string[]) => inProcess([...args, ...as('alice')])

beforeAll(async () => {
  ensureBuilt()
  dir = mkdtempSync(join(tmpdir(), 'tidelog-cli-acls-'))
  const users = join(dir, 'plain.jaas')
  writeFileSync(users, 'KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-pw" user_alice="alice-pw"; };\n')
  broker = await startBroker({
    dataDir: join(dir, 'data'),
    listeners: 'SASL_PLAINTEXT://127.0.0.1:0',
    saslPlainUsersFile: users,
    authorizerClassName: 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
    superUsers: 'User:admin',
    connectionFailedAuthenticationDelayMs: 0,
    logLevel: 'error',
  })
})

afterAll(async () => {
  await broker?.close()
  rmSync(dir, { recursive: true, force: true })
})

const rows = (out: string) => out.trim().split('\n').map((l) => l.split(/\s+/))

describe('tidelog acls', () => {
  it('create, list and delete ACLs, and the broker enforces them', async () => {
    expect(await admin(['topics', 'create', 'payments'])).toMatchObject({ code: 0 })
    expect(await admin(['produce', 'payments'], 'one\n')).toMatchObject({ code: 0 })
    const refused = await alice(['consume', 'payments', '--from-beginning', '--count', '1'])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/^tidelog: TOPIC_AUTHORIZATION_FAILED/)

    // kafka-acls.sh's spelling of operations (Read, Describe) and Kafka's (DESCRIBE_CONFIGS) both work.
    const created = await tidelog(['acls', 'create', '--allow-principal', 'User:alice', '--operation', 'Read', '--operation', 'DESCRIBE_CONFIGS', '--topic', 'payments', ...as('admin')])
    expect(created.code).toBe(0)
    expect(created.stderr).toBe('Added 2 ACLs.\n')
    const listed = await admin(['acls', 'list'])
    expect(rows(listed.stdout)).toEqual([
      ['RESOURCE-TYPE', 'NAME', 'PATTERN-TYPE', 'PRINCIPAL', 'HOST', 'OPERATION', 'PERMISSION'],
      ['TOPIC', 'payments', 'LITERAL', 'User:alice', '*', 'DESCRIBE_CONFIGS', 'ALLOW'],
      ['TOPIC', 'payments', 'LITERAL', 'User:alice', '*', 'READ', 'ALLOW'],
    ])
    expect(await admin(['acls', 'create', '--allow-principal', 'User:alice', '--operation', 'Read', '--group', 'pay', '--resource-pattern-type', 'prefixed'])).toMatchObject({ code: 0 })
    const json = JSON.parse((await admin(['acls', 'list', '--group', 'payers', '--resource-pattern-type', 'match', '--json'])).stdout)
    expect(json).toEqual([{ resourceType: 'GROUP', resourceName: 'pay', patternType: 'PREFIXED', principal: 'User:alice', host: '*', operation: 'READ', permission: 'ALLOW' }])

    const read = await alice(['consume', 'payments', '--from-beginning', '--count', '1', '--group', 'payers'])
    expect(read).toMatchObject({ code: 0, stdout: 'one\n' })

    const removed = await admin(['acls', 'delete', '--topic', 'payments', '--operation', 'read'])
    expect(removed.code).toBe(0)
    expect(removed.stderr).toBe('Removed 1 ACL.\n')
    expect(rows(removed.stdout)[1]).toEqual(['TOPIC', 'payments', 'LITERAL', 'User:alice', '*', 'READ', 'ALLOW'])
    expect(rows((await admin(['acls', 'list', '--principal', 'User:alice'])).stdout).map((r) => [r[0], r[5]])).toEqual([['RESOURCE-TYPE', 'OPERATION'], ['GROUP', 'READ'], ['TOPIC', 'DESCRIBE_CONFIGS']])
    const again = await alice(['consume', 'payments', '--from-beginning', '--count', '1'])
    expect(again.stderr).toMatch(/^tidelog: TOPIC_AUTHORIZATION_FAILED/)
  })

  it('refuses a bad command line with exit 2, and a user without ALTER on the cluster with exit 1 and Kafka\'s error', async () => {
    const usage = await Promise.all([
      admin(['acls', 'create', '--allow-principal', 'User:alice', '--operation', 'Read']),
      admin(['acls', 'create', '--allow-principal', 'alice', '--operation', 'Read', '--topic', 't']),
      admin(['acls', 'create', '--allow-principal', 'User:alice', '--operation', 'Fly', '--topic', 't']),
      admin(['acls', 'delete']),
    ])
    expect(usage.map((r) => r.code)).toEqual([2, 2, 2, 2])
    expect(usage[0]!.stderr).toContain('acls create needs a resource')
    expect(usage[1]!.stderr).toContain('--allow-principal takes Type:name')
    expect(usage[2]!.stderr).toContain('--operation "Fly" is not one of')
    expect(usage[3]!.stderr).toContain('pass --all to mean it')
    const denied = await alice(['acls', 'create', '--allow-principal', 'User:alice', '--operation', 'All', '--cluster'])
    expect(denied.code).toBe(1)
    expect(denied.stderr).toMatch(/^tidelog: CLUSTER_AUTHORIZATION_FAILED/)
    const all = await admin(['acls', 'delete', '--all'])
    expect(all.code).toBe(0)
    expect((await admin(['acls', 'list'])).stdout.trim().split('\n')).toHaveLength(1)
  })
})
