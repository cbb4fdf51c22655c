import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Broker, startBroker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import { Producer } from '@tidelog/producer'
import { type Browser, type Page, chromium } from 'playwright-core'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { peerUnavailable } from '../helpers/kafka.js'
import { root } from '../helpers/peer-record.js'

// The broker's web console in a real browser: Debian's Chromium (installed by
// test/helpers/install-peers.sh), driven headless by playwright-core. Each page's
// content is checked against what the broker reports over the Kafka protocol (Admin),
// and every page is kept as a screenshot in test-artifacts/console/.

const CHROMIUM = process.env.TIDELOG_CHROMIUM ?? '/usr/bin/chromium'
const ARTIFACTS = join(process.env.TIDELOG_ARTIFACTS ?? join(root, 'test-artifacts'), 'console')

function chromiumVersion(): string | undefined {
  try {
    return execFileSync(CHROMIUM, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  } catch (e) {
    peerUnavailable('Chromium', e)
    return undefined
  }
}
const chromiumSeen = chromiumVersion()

const ORDERS = Array.from({ length: 30 }, (_, i) => ({ partition: i % 3, key: `order-${i}`, value: { id: i, amount: 10 + i }, headers: { source: 'web', trace: `t${i}` } }))
const CONSUMED = 17
// An hour ago on a whole second (datetime-local inputs hold seconds), one audit record a minute.
const AUDIT_T0 = Math.floor(Date.now() / 1000) * 1000 - 3_600_000

describe.skipIf(!chromiumSeen)('the web console in Chromium', () => {
  let dir: string
  let broker: Broker
  let admin: Admin
  let producer: Producer
  let consumer: Consumer
  let browser: Browser
  let page: Page
  // Script errors and anything the browser refuses (a CSP violation, a missing file) fail the run.
  const pageErrors: string[] = []

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tidelog-console-'))
    mkdirSync(ARTIFACTS, { recursive: true })
    broker = await startBroker({ port: 0, dataDir: dir, consolePort: 0, groups: { initialRebalanceDelayMs: 0 } })
    const brokers = [`127.0.0.1:${broker.port}`]
    admin = new Admin({ brokers, clientId: 'console-test' })
    await admin.createTopics([
      { name: 'orders', partitions: 3, configs: { 'retention.ms': '86400000' } },
      { name: 'audit', partitions: 1 },
    ])
    producer = new Producer({ brokers, clientId: 'console-test', lingerMs: 0 })
    await producer.send(ORDERS.map((o) => ({ topic: 'orders', partition: o.partition, key: o.key, value: JSON.stringify(o.value), headers: o.headers })))
    await producer.send(Array.from({ length: 10 }, (_, i) => ({ topic: 'audit', value: `line ${i}: äöü`, timestamp: AUDIT_T0 + i * 60_000 })))
    consumer = new Consumer({ brokers, clientId: 'billing-app', groupId: 'billing', autoOffsetReset: 'earliest', autoCommit: false })
    await consumer.subscribe(['orders'])
    const it = consumer.messages()
    for (let n = 0; n < CONSUMED; n++) await it.next()
    await consumer.commit()
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] })
    page = await browser.newPage({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC' })
    page.on('pageerror', (err) => pageErrors.push(err.message))
    page.on('console', (m) => {
      if (m.type() === 'error') pageErrors.push(m.text())
    })
    page.setDefaultTimeout(20_000)
  })

  afterAll(async () => {
    await browser?.close()
    await consumer?.close()
    await producer?.close()
    await admin?.close()
    await broker?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  afterEach(() => {
    expect(pageErrors.splice(0)).toEqual([])
  })

  // Generous: a loaded 2-core machine may take seconds to render what the page polls for.
  const poll = <T>(fn: () => Promise<T>) => expect.poll(fn, { timeout: 30_000, interval: 100 })

  const open = async (hash: string) => {
    await page.goto(`${broker.console!.url}${hash}`)
  }
  const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true })
  const cell = (row: string, col: string) => page.locator(`${row} [data-col=${col}]`).innerText()
  // Pixels of a chart canvas in the first series' colour (#0b6bcb): the line was drawn.
  const inked = (testid: string): Promise<number> =>
    page.evaluate(`(() => {
      const c = document.querySelector('[data-testid=${testid}]')
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data
      let n = 0
      for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && Math.abs(d[i] - 11) < 40 && Math.abs(d[i + 1] - 107) < 40 && Math.abs(d[i + 2] - 203) < 40) n++
      return n
    })()`)

  it('shows broker health and the topics with the offsets the broker reports', async () => {
    await open('#/')
    await poll(() => page.locator('[data-testid=health-status] .value').innerText()).toBe('online')
    expect(await page.locator('[data-testid=health-topics] .value').innerText()).toBe('2')
    expect(await page.locator('[data-testid=health-partitions] .value').innerText()).toBe('4')
    expect(await page.locator('[data-testid=health-messages-in] .value').innerText()).toBe('40')
    expect(await page.locator('[data-testid=health-node] .value').innerText()).toBe(String(broker.nodeId))
    expect(await page.locator('[data-testid=health-cluster] .value').innerText()).toBe(broker.clusterId)
    // The throughput chart has drawn the produce once the sampler has seen it: a line in the first series' colour.
    await poll(async () => page.locator('[data-testid=throughput-chart] + .legend').innerText()).toContain('orders')
    await poll(() => inked('throughput-chart')).toBeGreaterThan(50)
    await shot('overview')

    await open('#/topics')
    for (const name of ['orders', 'audit']) {
      const offsets = await admin.listOffsets(name, 'latest')
      const earliest = await admin.listOffsets(name, 'earliest')
      const messages = offsets.reduce((s, o, i) => s + Number(o.offset - earliest[i]!.offset), 0)
      const row = `[data-testid=topics-table] tr[data-topic="${name}"]`
      await poll(() => cell(row, 'messages')).toBe(String(messages))
      expect(await cell(row, 'partitions')).toBe(String(offsets.length))
    }
    await shot('topics')
  })

  it('shows partitions and configs of a topic as ListOffsets and DescribeConfigs see them', async () => {
    await open('#/topics/orders')
    const latest = await admin.listOffsets('orders', 'latest')
    for (const o of latest) {
      const row = `[data-testid=partitions-table] tr[data-partition="${o.partition}"]`
      await poll(() => cell(row, 'hw')).toBe(String(o.offset))
      expect(await cell(row, 'start')).toBe('0')
    }
    const [described] = await admin.describeConfigs([{ type: 'topic', name: 'orders' }])
    const retention = described!.configs.find((c) => c.name === 'retention.ms')!
    const row = page.locator('[data-testid=configs-table] tr[data-config="retention.ms"]')
    expect(await row.locator('td').nth(1).innerText()).toBe(retention.value)
    expect(await row.getAttribute('class')).toBe('override')
    await page.locator('[data-testid=overrides-only]').check()
    await poll(() => page.locator('[data-testid=configs-table] tbody tr').count()).toBe(1)
    await shot('topic')
  })

  it('browses a partition, decodes JSON and headers, and tails new records live', async () => {
    await open('#/topics/orders/1')
    const sent = ORDERS.filter((o) => o.partition === 1)
    const rows = page.locator('[data-testid=messages-table] tbody tr')
    await poll(() => rows.count()).toBe(sent.length)
    for (const [i, o] of sent.entries()) {
      const row = `[data-testid=messages-table] tr[data-offset="${i}"]`
      expect(await cell(row, 'key')).toBe(o.key)
      expect(JSON.parse(await cell(row, 'value'))).toEqual(o.value)
      expect((await cell(row, 'headers')).split('\n')).toEqual([`source: ${o.headers.source}`, `trace: ${o.headers.trace}`])
    }
    await page.locator('[data-testid=tail]').click()
    await producer.send({ topic: 'orders', partition: 1, key: 'late', value: JSON.stringify({ id: 99 }) })
    const tailRow = `[data-testid=messages-table] tr[data-offset="${sent.length}"]`
    await poll(() => page.locator(tailRow).count()).toBe(1)
    expect(await cell(tailRow, 'key')).toBe('late')
    expect(JSON.parse(await cell(tailRow, 'value'))).toEqual({ id: 99 })
    await page.locator('[data-testid=tail]').click()
    await shot('messages')
    await page.locator('[data-testid=decode]').selectOption('base64')
    expect(await cell(tailRow, 'key')).toBe(Buffer.from('late').toString('base64'))

    await open('#/topics/audit/0')
    await page.locator('[data-testid=offset]').fill('7')
    await page.locator('[data-testid=go]').click()
    await poll(() => page.locator('[data-testid=messages-table] tbody tr').first().getAttribute('data-offset')).toBe('7')
    expect(await cell('[data-testid=messages-table] tr[data-offset="7"]', 'value')).toBe('line 7: äöü')
    // Jumping to a time lands on the first record at or after it, as ListOffsets by timestamp does.
    const at = AUDIT_T0 + 4 * 60_000 + 1000
    await page.locator('[data-testid=timestamp]').fill(new Date(at).toISOString().slice(0, 19))
    await page.locator('[data-testid=go]').click()
    const [byTime] = await admin.listOffsets([{ topic: 'audit', partition: 0, timestamp: at }])
    expect(byTime!.offset).toBe(5n)
    await poll(() => page.locator('[data-testid=messages-table] tbody tr').first().getAttribute('data-offset')).toBe('5')
    expect(await cell('[data-testid=messages-table] tr[data-offset="5"]', 'timestamp')).toBe(new Date(AUDIT_T0 + 5 * 60_000).toISOString())
  })

  it('shows the group, its member and assignment, and lag per partition as the group coordinator reports it', async () => {
    const committed = await admin.fetchOffsets('billing', ['orders'])
    const latest = await admin.listOffsets('orders', 'latest')
    const expectedLag = new Map(committed.filter((c) => c.offset >= 0n).map((c) => [c.partition, Number(latest.find((l) => l.partition === c.partition)!.offset - c.offset)]))
    const [group] = await admin.describeGroups(['billing'])
    expect(group!.members).toHaveLength(1)

    await open('#/groups')
    const row = '[data-testid=groups-table] tr[data-group="billing"]'
    await poll(() => cell(row, 'state')).toBe(group!.state)
    expect(await cell(row, 'members')).toBe('1')
    expect(await cell(row, 'lag')).toBe(String([...expectedLag.values()].reduce((a, b) => a + b, 0)))
    await shot('groups')

    await open('#/groups/billing')
    const member = group!.members[0]!
    const memberRow = `[data-testid=members-table] tr[data-member="${member.memberId}"]`
    const assigned = member.memberAssignment!.assignedPartitions.map((a) => `${a.topic}: ${[...a.partitions].sort((x, y) => x - y).join(',')}`).join('; ')
    await poll(() => cell(memberRow, 'assignment')).toBe(assigned)
    for (const c of committed.filter((x) => x.offset >= 0n)) {
      const lagRow = `[data-testid=lag-table] tr[data-topic="orders"][data-partition="${c.partition}"]`
      expect(await cell(lagRow, 'committed')).toBe(String(c.offset))
      expect(await cell(lagRow, 'lag')).toBe(String(expectedLag.get(c.partition)))
    }
    // The live chart has one line per partition with a commit.
    await poll(async () => (await page.locator('[data-testid=lag-chart] + .legend span').count())).toBe(expectedLag.size)
    await poll(() => inked('lag-chart')).toBeGreaterThan(50)
    await shot('group')
  })
})

// With security on (a SASL listener and StandardAuthorizer), the browser logs in with a SASL
// user of the broker (HTTP Basic: Chromium's own credentials prompt, answered through
// playwright's httpCredentials) and sees only what that user's ACLs allow.
describe.skipIf(!chromiumSeen)('the web console in Chromium, with security on', () => {
  let dir: string
  let broker: Broker
  let admin: Admin
  let browser: Browser

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tidelog-console-login-'))
    mkdirSync(ARTIFACTS, { recursive: true })
    const users = join(dir, 'users.jaas')
    writeFileSync(users, 'KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-pw" user_alice="alice-pw"; };\n')
    broker = await startBroker({
      dataDir: join(dir, 'data'),
      listeners: 'SASL_PLAINTEXT://127.0.0.1:0',
      saslPlainUsersFile: users,
      authorizerClassName: 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
      superUsers: 'User:admin',
      consolePort: 0,
    })
    const sasl = { mechanism: 'PLAIN' as const, username: 'admin', password: 'admin-pw' }
    admin = new Admin({ brokers: [`127.0.0.1:${broker.port}`], clientId: 'console-login-test', sasl })
    await admin.createTopics([{ name: 'alice-reads', partitions: 1 }, { name: 'alice-sees', partitions: 1 }, { name: 'hidden', partitions: 1 }])
    await admin.createAcls([
      { resourceType: 'TOPIC', resourceName: 'alice-reads', principal: 'User:alice', operation: 'READ', permission: 'ALLOW' },
      { resourceType: 'TOPIC', resourceName: 'alice-sees', principal: 'User:alice', operation: 'DESCRIBE', permission: 'ALLOW' },
    ])
    const producer = new Producer({ brokers: [`127.0.0.1:${broker.port}`], clientId: 'console-login-test', sasl, lingerMs: 0 })
    try {
      await producer.send(['alice-reads', 'alice-sees', 'hidden'].map((topic) => ({ topic, key: 'k', value: `in ${topic}` })))
    } finally {
      await producer.close()
    }
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] })
  })

  afterAll(async () => {
    await browser?.close()
    await admin?.close()
    await broker?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  const poll = <T>(fn: () => Promise<T>) => expect.poll(fn, { timeout: 30_000, interval: 100 })

  it('refuses the page without a login (401 and a Basic challenge) and with a wrong password', async () => {
    // Headless Chromium has no one to type into its login prompt: it shows the 401 answer, or ends
    // the navigation with ERR_INVALID_AUTH_CREDENTIALS; either way no console page is served.
    for (const httpCredentials of [undefined, { username: 'alice', password: 'wrong' }]) {
      const context = await browser.newContext(httpCredentials === undefined ? {} : { httpCredentials })
      try {
        const page = await context.newPage()
        const nav = await page.goto(broker.console!.url).catch((e: Error) => e)
        if (nav instanceof Error) expect(nav.message).toMatch(/ERR_INVALID_AUTH_CREDENTIALS/)
        else expect(nav!.status()).toBe(401)
        expect(await page.locator('[data-testid=view]').count()).toBe(0)
        const res = await context.request.get(broker.console!.url)
        expect(res.status()).toBe(401)
        expect(res.headers()['www-authenticate']).toBe('Basic realm="tidelog console", charset="UTF-8"')
        expect((await res.json()).error).toBe('SASL_AUTHENTICATION_FAILED')
      } finally {
        await context.close()
      }
    }
  })

  it('a SASL user logs in and sees only the topics it may describe; a topic it may not read shows Kafka\'s error', async () => {
    const context = await browser.newContext({ httpCredentials: { username: 'alice', password: 'alice-pw' }, viewport: { width: 1280, height: 900 } })
    const errors: string[] = []
    try {
      const page = await context.newPage()
      page.on('pageerror', (err) => errors.push(err.message))
      page.setDefaultTimeout(20_000)
      await page.goto(`${broker.console!.url}#/topics`)
      await poll(() => page.locator('[data-testid=status]').innerText()).toBe('online · User:alice')
      await poll(() => page.locator('[data-testid=topics-table] tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-topic')))).toEqual(['alice-reads', 'alice-sees'])
      await page.screenshot({ path: join(ARTIFACTS, 'login-topics.png'), fullPage: true })

      await page.goto(`${broker.console!.url}#/topics/alice-reads/0`)
      await poll(() => page.locator('[data-testid=messages-table] [data-col=value]').allInnerTexts()).toEqual(['in alice-reads'])
      await page.goto(`${broker.console!.url}#/topics/alice-sees/0`)
      await poll(() => page.locator('[data-testid=error]').innerText()).toBe('TOPIC_AUTHORIZATION_FAILED: User:alice is not authorized to read topic alice-sees')
      await page.goto(`${broker.console!.url}#/topics/alice-sees`)
      await poll(() => page.locator('[data-testid=configs-withheld]').count()).toBe(1)
      await page.screenshot({ path: join(ARTIFACTS, 'login-configs-withheld.png'), fullPage: true })
      expect(errors).toEqual([])
    } finally {
      await context.close()
    }
  })
})
