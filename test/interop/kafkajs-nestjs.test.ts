/**
 * NestJS microservices' Kafka transport with `kafkajs` resolved to @tidelog/kafkajs: event and
 * request-response patterns between two Nest apps over tidelog's broker, the same as with real
 * kafkajs 2.2.4 under the same apps. @nestjs/microservices
 * 10.4.9 is installed once into the cache (outside the repo) by npm; `kafkajs` there is a link
 * to packages/kafkajs (its build: run `npm run build -w @tidelog/kafkajs` first, as
 * `npm run test:interop` does).
 */
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, copyFileSync, lstatSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { startBroker, type Broker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cacheRoot, peerUnavailable } from '../helpers/kafka.js'

const run = promisify(execFile)
const NEST = '10.4.9'
const root = fileURLToPath(new URL('../../', import.meta.url))

/** The Nest project in the cache; `kafkajs` is linked per run (see linkKafkajs). */
async function nestProject(): Promise<string> {
  const dir = join(cacheRoot(), `nestjs-${NEST}`)
  if (!existsSync(join(dir, 'node_modules', '@nestjs', 'microservices', 'package.json'))) {
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, 'package.json'), '{"name":"nest-peer","private":true}\n')
    await run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', `@nestjs/common@${NEST}`, `@nestjs/core@${NEST}`, `@nestjs/microservices@${NEST}`, 'reflect-metadata@0.2.2', 'rxjs@7.8.1'], { cwd: dir, timeout: 300_000 })
  }
  if (!existsSync(join(root, 'packages', 'kafkajs', 'dist', 'index.cjs'))) throw new Error('packages/kafkajs is not built (npm run build -w @tidelog/kafkajs)')
  copyFileSync(fileURLToPath(new URL('./kafkajs-nestjs/apps.cjs', import.meta.url)), join(dir, 'apps.cjs'))
  return dir
}

/** Points the project's `kafkajs` at real kafkajs 2.2.4 (the repo's devDependency) or at @tidelog/kafkajs. */
function linkKafkajs(dir: string, target: 'kafkajs' | '@tidelog/kafkajs'): void {
  const link = join(dir, 'node_modules', 'kafkajs')
  let present = existsSync(link)
  try {
    present ||= lstatSync(link).isSymbolicLink()
  } catch {}
  if (present) rmSync(link, { recursive: true, force: true })
  symlinkSync(target === 'kafkajs' ? join(root, 'node_modules', 'kafkajs') : join(root, 'packages', 'kafkajs'), link, 'dir')
}

describe('NestJS microservices (Kafka transport) on @tidelog/kafkajs, over tidelog-broker', () => {
  let dir: string | undefined
  let skip: string | undefined
  let broker: Broker | undefined
  let dataDir: string | undefined

  beforeAll(async () => {
    try {
      dir = await nestProject()
    } catch (e) {
      skip = peerUnavailable(`@nestjs/microservices ${NEST}`, e)
      return
    }
    dataDir = mkdtempSync(join(tmpdir(), 'tidelog-nest-'))
    broker = await startBroker({ port: 0, dataDir, groups: { initialRebalanceDelayMs: 100 } })
  }, 400_000)

  afterAll(async () => {
    await broker?.close()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  })

  it('request-response (MessagePattern) and events (EventPattern) between two Nest apps', async (ctx) => {
    if (skip) return ctx.skip()
    const brokers = [`127.0.0.1:${broker!.port}`]
    const admin = new Admin({ brokers })
    await admin.createTopics(['math.sum', 'math.sum.reply', 'user.created'].map((name) => ({ name, partitions: 1 })))
    await admin.close()
    const apps = async (target: 'kafkajs' | '@tidelog/kafkajs') => {
      linkKafkajs(dir!, target)
      const { stdout } = await run(process.execPath, [join(dir!, 'apps.cjs'), brokers.join(',')], { cwd: dir, timeout: 150_000 })
      return JSON.parse(stdout.trim().split('\n').pop()!) as { sums: unknown[]; events: unknown[]; kafkajs: string }
    }
    const theirs = await apps('kafkajs')
    const ours = await apps('@tidelog/kafkajs')
    // The transport ran on our package: `kafkajs` resolved into packages/kafkajs.
    expect(ours.kafkajs).toContain(join('packages', 'kafkajs'))
    expect(theirs.kafkajs).toContain(join('node_modules', 'kafkajs'))
    // Nest's Kafka parser hands back non-JSON-object replies as strings, with either library.
    expect(ours.sums).toEqual(['6', '30', '7'])
    expect(ours.events).toEqual([1, 2, 3].map((id) => ({ id, name: `user-${id}` })))
    expect({ sums: ours.sums, events: ours.events }).toEqual({ sums: theirs.sums, events: theirs.events })
  }, 200_000)
})
