/**
 * ACLs and client quotas as Kafka's own tools see them (issue 16), on one Apache Kafka 4.4 with
 * StandardAuthorizer and a tidelog broker configured the same (one Kafka for both saves CI its
 * 25-40 s start).
 *
 * ACLs: kafka-acls.sh (org.apache.kafka.tools.AclCommand) adds, lists and removes ACLs over SASL
 * PLAIN as a super user and prints the same listings on both. Then the Java producer, as a user
 * with no ACL, is refused with TopicAuthorizationException on both, and succeeds on both once
 * kafka-acls.sh grants WRITE.
 *
 * Quotas: kafka-configs.sh (org.apache.kafka.tools.ConfigCommand) sets, describes and deletes
 * user and client-id quotas (named and default entities) over the PLAINTEXT listener (a super
 * user there) and prints the same output on both, errors included. Then a Java producer over a
 * client-id quota reports a throttle (produce-throttle-time-max above zero) on both: the broker
 * answered throttle_time_ms and the Java client honoured it. Last, the Java Admin creates topics
 * over a controller_mutation_rate (KIP-599, retryOnQuotaViolation off): the topic asked for
 * below zero fails with ThrottlingQuotaExceededException and a throttle on both.
 *
 * Each broker's script runs in one JVM (acls-java/AclSteps.java, quotas-java/QuotaSteps.java):
 * a JVM start per step would cost a minute more.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Broker, startBroker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { KAFKA_VERSIONS, type KafkaNode, compileJava, peerUnavailable, spawnJavaTool, startKafka } from '../helpers/kafka.js'
import { recordPeer } from '../helpers/peers.js'

const version = KAFKA_VERSIONS.latest
const AUTHORIZER = 'org.apache.kafka.metadata.authorizer.StandardAuthorizer'
// The PLAINTEXT listener (and KRaft's controller on Kafka) run as User:ANONYMOUS.
const SUPER_USERS = 'User:ANONYMOUS;User:admin'
const JAAS_USERS = 'user_admin="admin-pw" user_alice="alice-pw"'

/** Each broker under test, its SASL_PLAINTEXT listener and its PLAINTEXT one. */
type Target = { name: string; sasl: string; plain: string }

let dir: string
let kafka: KafkaNode | undefined
let broker: Broker | undefined
let skip: string | undefined
const targets: Target[] = []

const clientProps = (user: string): string => {
  const f = join(dir, `${user}.properties`)
  writeFileSync(
    f,
    [
      'security.protocol=SASL_PLAINTEXT',
      'sasl.mechanism=PLAIN',
      `sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="${user}" password="${user}-pw";`,
    ].join('\n') + '\n',
  )
  return f
}

const ACL_SOURCE = fileURLToPath(new URL('./acls-java/AclSteps.java', import.meta.url))
const QUOTA_SOURCE = fileURLToPath(new URL('./quotas-java/QuotaSteps.java', import.meta.url))
let classes: Promise<string> | undefined

/**
 * Runs `mainClass` with `lead` arguments and the steps joined by `::` in one JVM; answers each
 * step's output (the tool prints "=== step N" before each).
 */
async function runSteps(mainClass: string, label: string, lead: string[], script: string[][]): Promise<string[]> {
  classes ??= compileJava([ACL_SOURCE, QUOTA_SOURCE], { version })
  const child = await spawnJavaTool(mainClass, [...lead, ...script.flatMap((s, i) => (i === 0 ? s : ['::', ...s]))], { version, classpath: [await classes] })
  child.stdin!.end()
  let out = ''
  let err = ''
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d))
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err = (err + d).slice(-20_000)))
  const timer = setTimeout(() => child.kill('SIGKILL'), 240_000)
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
  clearTimeout(timer)
  const parts = out.split(/^=== step \d+\n/m).slice(1)
  if (code !== 0 || parts.length !== script.length) throw new Error(`${mainClass} on ${label} exited ${code} after ${parts.length} of ${script.length} steps:\n${out}\n${err}`)
  return parts
}

/** The ACL steps (each `['acls', ...args]` or `['produce', topic]`) against one broker's SASL listener. */
function aclSteps(t: Target, script: string[][]): Promise<string[]> {
  const withAdmin = script.map((s) => (s[0] === 'acls' ? [...s, '--bootstrap-server', t.sasl, '--command-config', join(dir, 'admin.properties')] : s))
  return runSteps('AclSteps', t.name, [t.sasl, join(dir, 'alice.properties')], withAdmin)
}

/** The quota steps (each `['configs', ...args]` or `['produce', topic, clientId]`) against one broker's PLAINTEXT listener; answers each step's lines. */
async function quotaSteps(t: Target, script: string[][]): Promise<string[][]> {
  const withServer = script.map((s) => (s[0] === 'configs' ? [...s, '--bootstrap-server', t.plain] : s))
  const parts = await runSteps('QuotaSteps', t.name, [t.plain], withServer)
  // ConfigCommand lists entities from a hash map: the order of lines is not part of the answer;
  // nor is the address, which an error message repeats.
  return parts.map((p) => p.split('\n').map((l) => l.trim().replaceAll(t.plain, '<bootstrap>')).filter((l) => l !== '').sort())
}

/**
 * AclCommand prints resources and their entries from hash sets: the order is not part of the
 * answer, so each resource block is kept with its sorted entries and the blocks are sorted.
 */
function normalize(out: string): string[] {
  const blocks: string[] = []
  let current: string[] | undefined
  const flush = () => {
    if (current !== undefined) blocks.push([current[0], ...current.slice(1).sort()].join('\n'))
    current = undefined
  }
  for (const raw of out.split('\n')) {
    const line = raw.trim()
    if (line === '') continue
    if (line.startsWith('(principal=')) current?.push(line)
    else {
      flush()
      current = [line]
    }
  }
  flush()
  return blocks.sort()
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tidelog-acls-interop-'))
  classes = compileJava([ACL_SOURCE, QUOTA_SOURCE], { version })
  classes.catch(() => {})
  clientProps('admin')
  clientProps('alice')
  const jaas = join(dir, 'broker.jaas')
  writeFileSync(jaas, `KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-pw" ${JAAS_USERS}; };\n`)
  try {
    kafka = await startKafka({
      version,
      extraListeners: { SASL: 'SASL_PLAINTEXT' },
      properties: {
        'authorizer.class.name': AUTHORIZER,
        'super.users': SUPER_USERS,
        'sasl.enabled.mechanisms': 'PLAIN',
        'listener.name.sasl.plain.sasl.jaas.config': `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-pw" ${JAAS_USERS};`,
        'auto.create.topics.enable': false,
      },
      startTimeoutMs: 120_000,
    })
    targets.push({ name: `Apache Kafka ${kafka.runtimeVersion}`, sasl: `127.0.0.1:${kafka.listeners.SASL}`, plain: `127.0.0.1:${kafka.port}` })
  } catch (e) {
    skip = peerUnavailable(`Apache Kafka ${version}`, e) as string
  }
  broker = await startBroker({
    dataDir: join(dir, 'tidelog'),
    listeners: 'PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0',
    saslEnabledMechanisms: 'PLAIN',
    saslPlainUsersFile: jaas,
    authorizerClassName: AUTHORIZER,
    superUsers: SUPER_USERS,
    autoCreateTopics: false,
    connectionFailedAuthenticationDelayMs: 0,
    logLevel: 'warn',
  })
  targets.push({ name: 'tidelog', sasl: `127.0.0.1:${broker.listeners[1]!.port}`, plain: `127.0.0.1:${broker.listeners[0]!.port}` })
}, 240_000)

afterAll(async () => {
  await kafka?.stop()
  await broker?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe(`kafka-acls.sh ${version} against tidelog and Apache Kafka with StandardAuthorizer`, () => {
  it('adds, lists (all, by MATCH) and removes ACLs with the same output on both; the Java producer is refused, then served once WRITE is granted', async (ctx) => {
    if (skip !== undefined) return ctx.skip()
    // Every --add and --remove prints the resource's ACLs afterwards, so each step is a listing too.
    const script = [
      ['acls', '--add', '--allow-principal', 'User:alice', '--operation', 'Read', '--operation', 'Describe', '--topic', 'orders'],
      ['acls', '--add', '--allow-principal', 'User:alice', '--operation', 'Read', '--group', 'alice-', '--resource-pattern-type', 'prefixed'],
      ['acls', '--add', '--deny-principal', 'User:alice', '--deny-host', '10.0.0.9', '--operation', 'All', '--topic', 'ord', '--resource-pattern-type', 'prefixed'],
      ['acls', '--add', '--allow-principal', 'User:*', '--operation', 'Describe', '--transactional-id', '*', '--cluster'],
      ['acls', '--list', '--topic', 'orders', '--resource-pattern-type', 'match'],
      ['acls', '--remove', '--force', '--deny-principal', 'User:alice', '--deny-host', '10.0.0.9', '--operation', 'All', '--topic', 'ord', '--resource-pattern-type', 'prefixed'],
      ['acls', '--remove', '--force', '--cluster'],
      ['acls', '--list'],
      ['produce', 'java-acl'],
      ['acls', '--add', '--allow-principal', 'User:alice', '--producer', '--topic', 'java-acl'],
      ['produce', 'java-acl'],
    ]
    const outputs = new Map<string, string[][]>()
    for (const t of targets) {
      const admin = new Admin({ brokers: [t.sasl], clientId: 'acl-interop', sasl: { mechanism: 'PLAIN', username: 'admin', password: 'admin-pw' } })
      try {
        await admin.createTopics([{ name: 'java-acl', partitions: 1 }])
        outputs.set(t.name, (await aclSteps(t, script)).map(normalize))
        expect((await admin.listOffsets('java-acl')).map((o) => o.offset), t.name).toEqual([2n])
      } finally {
        await admin.close()
      }
    }
    const theirs = outputs.get(targets[0]!.name)!
    const ours = outputs.get('tidelog')!
    ours.forEach((out, i) => expect(out, `step ${i}: ${script[i]!.join(' ')}`).toEqual(theirs[i]))
    // The comparison is only worth something if the listings say something.
    expect(ours[1]!.join('\n')).toMatch(/ResourcePattern\(resourceType=GROUP, name=alice-, patternType=PREFIXED\)/)
    expect(ours[4]!.join('\n')).toMatch(/name=ord, patternType=PREFIXED/)
    expect(ours[7]!.join('\n')).toMatch(/TRANSACTIONAL_ID/)
    expect(ours[7]!.join('\n')).not.toMatch(/DENY|CLUSTER/)
    expect(ours[8]).toEqual(['refused: TopicAuthorizationException: Not authorized to access topics: [java-acl]'])
    expect(ours[10]).toEqual(['produced'])
    recordPeer('Apache Kafka', kafka!.runtimeVersion)
    recordPeer('Java client', kafka!.runtimeVersion)
  }, 480_000)
})

describe(`kafka-configs.sh ${version} client quotas against tidelog and Apache Kafka`, () => {
  it('sets, describes and deletes quotas with the same output on both; a Java producer over its quota is throttled on both', async (ctx) => {
    if (skip !== undefined) return ctx.skip()
    const script = [
      ['configs', '--alter', '--add-config', 'producer_byte_rate=1024,consumer_byte_rate=2048', '--entity-type', 'users', '--entity-name', 'alice'],
      ['configs', '--alter', '--add-config', 'producer_byte_rate=4096', '--entity-type', 'clients', '--entity-default'],
      ['configs', '--alter', '--add-config', 'request_percentage=50', '--entity-type', 'users', '--entity-name', 'alice', '--entity-type', 'clients', '--entity-name', 'etl'],
      ['configs', '--describe', '--entity-type', 'users', '--entity-name', 'alice'],
      ['configs', '--describe', '--entity-type', 'clients', '--entity-default'],
      ['configs', '--describe', '--entity-type', 'users', '--entity-name', 'alice', '--entity-type', 'clients', '--entity-name', 'etl'],
      ['configs', '--describe', '--entity-type', 'clients'],
      ['configs', '--alter', '--add-config', 'producer_byte_rate=1.5', '--entity-type', 'users', '--entity-name', 'bob'],
      ['configs', '--alter', '--delete-config', 'consumer_byte_rate', '--entity-type', 'users', '--entity-name', 'alice'],
      ['configs', '--describe', '--entity-type', 'users', '--entity-name', 'alice'],
      ['configs', '--alter', '--add-config', 'producer_byte_rate=1024', '--entity-type', 'clients', '--entity-name', 'throttled'],
      ['produce', 'quota-java', 'throttled'],
      // KIP-599: a burst of 11 (1/s over 11 windows); 12 partitions take it below zero.
      ['configs', '--alter', '--add-config', 'controller_mutation_rate=1', '--entity-type', 'clients', '--entity-name', 'mutator'],
      ['topics', 'mutator', 'mutation-a:12', 'mutation-b:1'],
    ]
    // Both brokers refuse to create topics on produce here (the ACL setup), so the topic is made first.
    await Promise.all(
      targets.map(async (t) => {
        const admin = new Admin({ brokers: [t.plain], clientId: 'quota-interop' })
        try {
          await admin.createTopics([{ name: 'quota-java', partitions: 1 }])
        } finally {
          await admin.close()
        }
      }),
    )
    const [theirs, ours] = await Promise.all(targets.map((t) => quotaSteps(t, script)))
    // Log lines carry timestamps; the producer's own lines are compared below.
    const plain = (out: string[]) => out.filter((l) => !l.startsWith('['))
    ours!.forEach((out, i) => expect(plain(out), `step ${i}: ${script[i]!.join(' ')}`).toEqual(plain(theirs![i]!)))
    // Java's NetworkClient logs the throttle_time_ms it honours: the same on both, within rounding
    // and the few ms between the two brokers' clocks (Kafka's formula on the same bytes).
    const throttledFor = (out: string[]) => Number(/is throttled for (\d+) ms/.exec(out.join('\n'))?.[1])
    const [tk, tt] = [throttledFor(theirs![11]!), throttledFor(ours![11]!)]
    expect(tk).toBeGreaterThan(0)
    expect(Math.abs(tt - tk)).toBeLessThanOrEqual(tk * 0.1)
    console.log(`Java producer throttled for ${tt} ms by tidelog, ${tk} ms by Apache Kafka ${kafka!.runtimeVersion}`)
    // The comparison is only worth something if the output says something.
    expect(ours![3]).toEqual(["Quota configs for user-principal 'alice' are consumer_byte_rate=2048.0, producer_byte_rate=1024.0"])
    expect(ours![4]!.join('\n')).toMatch(/default client-id.*producer_byte_rate=4096.0/)
    expect(ours![7]!.join('\n')).toMatch(/producer_byte_rate cannot be a fractional value|Invalid|Error/)
    expect(ours![9]).toEqual(["Quota configs for user-principal 'alice' are producer_byte_rate=1024.0"])
    expect(plain(ours![11]!)).toEqual(['throttle-time-max > 0'])
    expect(plain(ours![13]!)).toEqual(['mutation-a: created', 'mutation-b: ThrottlingQuotaExceededException: The throttling quota has been exceeded. (throttle > 0)'])
    recordPeer('Apache Kafka', kafka!.runtimeVersion)
    recordPeer('Java client', kafka!.runtimeVersion)
  }, 300_000)
})
