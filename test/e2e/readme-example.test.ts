/**
 * The root README's first example, taken from README.md and run as written against the tidelog
 * broker, then checked for what the README says happens: the message read and committed before
 * `break` is not read again by the next member of the group. Without the commit (the same code
 * minus that line) it is, which is the at-least-once behaviour the README describes.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker } from '@tidelog/broker'
import * as client from '@tidelog/client'
import * as consumerPkg from '@tidelog/consumer'
import * as producerPkg from '@tidelog/producer'
import { afterEach, describe, expect, it } from 'vitest'

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f().catch(() => {})
})

const modules: Record<string, unknown> = { '@tidelog/client': client, '@tidelog/consumer': consumerPkg, '@tidelog/producer': producerPkg }
const COMMIT_LINE = /^\s*await consumer\.commit\(\).*\n/m

/** The first ```ts block of the README's "Using it" section. */
function readmeExample(): string {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
  const section = readme.slice(readme.indexOf('## Using it'))
  const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1]
  if (block === undefined) throw new Error('README.md has no ```ts block under "## Using it"')
  return block
}

/**
 * Runs the example's code unchanged but for its module imports (bound to the packages' sources)
 * and the broker address (the README's 127.0.0.1:9092 becomes the test broker's port). Returns
 * what it printed with console.log.
 */
async function run(code: string, port: number): Promise<unknown[][]> {
  const address = "const brokers = ['127.0.0.1:9092']"
  expect(code, 'the example bootstraps from 127.0.0.1:9092').toContain(address)
  let body = code.replace(address, `const brokers = ['127.0.0.1:${port}']`)
  body = body.replace(/^import \{([^}]+)\} from '([^']+)'$/gm, (_, names: string, from: string) => {
    expect(Object.keys(modules), `the example imports ${from}`).toContain(from)
    return `const {${names}} = modules[${JSON.stringify(from)}]`
  })
  const printed: unknown[][] = []
  const console = { log: (...args: unknown[]) => printed.push(args) }
  const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => (...a: unknown[]) => Promise<void>
  await new AsyncFunction('modules', 'console', body)(modules, console)
  return printed
}

async function broker() {
  const dataDir = mkdtempSync(join(tmpdir(), 'tidelog-readme-'))
  const b = await startBroker({ port: 0, dataDir })
  cleanup.push(async () => {
    await b.close()
    rmSync(dataDir, { recursive: true, force: true })
  })
  return b
}

/** What the next member of group billing reads first, after one more record for user-1. */
async function nextMemberReads(port: number): Promise<{ offset: bigint; value: string | undefined }> {
  const brokers = [`127.0.0.1:${port}`]
  const producer = new producerPkg.Producer({ brokers })
  await producer.send({ topic: 'events', key: 'user-1', value: 'second' })
  await producer.close()
  const next = new consumerPkg.Consumer({ brokers, groupId: 'billing', autoOffsetReset: 'earliest' })
  cleanup.push(() => next.close())
  await next.subscribe(['events'])
  for await (const m of next) return { offset: m.offset, value: m.value?.toString() }
  throw new Error('the consumer ended without a message')
}

describe("the README's first example", () => {
  it('reads the message, commits it, breaks, closes: the next member of the group does not read it again', async () => {
    const b = await broker()
    const printed = await run(readmeExample(), b.port)
    expect(printed).toHaveLength(1)
    const [partition, offset, key, value] = printed[0]!
    expect([offset, key, value]).toEqual([0n, 'user-1', 'hello'])
    expect(partition).toEqual(expect.any(Number))
    expect(await nextMemberReads(b.port)).toEqual({ offset: 1n, value: 'second' })
  }, 20_000)

  it('without the commit before break, the message counts as unprocessed and the next member reads it again', async () => {
    const b = await broker()
    const code = readmeExample()
    expect(code, 'the example commits before break').toMatch(COMMIT_LINE)
    const printed = await run(code.replace(COMMIT_LINE, ''), b.port)
    expect(printed.map((p) => p.slice(1))).toEqual([[0n, 'user-1', 'hello']])
    expect(await nextMemberReads(b.port)).toEqual({ offset: 0n, value: 'hello' })
  }, 20_000)
})
