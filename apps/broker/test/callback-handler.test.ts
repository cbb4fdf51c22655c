/**
 * sasl.server.callback.handler.class as a JavaScript module (ESM or CommonJS) deciding PLAIN
 * logins, broker-wide and per listener: asynchronous answers, a throwing handler failing only
 * that login (never crashing, never logging the password), SaslHandshake v0's bare tokens, and
 * a clear error at start for a missing or unusable module.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { type Socket, connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Producer } from '@tidelog/producer'
import { ApiKeys, ErrorCodes, encodeRequestFrame } from '@tidelog/protocol'
import { type Broker, startBroker } from '../src/index.js'
import { RawClient } from './helpers/raw-client.js'
import { captureLogger, login } from './security/helpers.js'

let dir: string
let broker: Broker
const log = captureLogger()
const port = (name: string) => broker.listeners.find((l) => l.name === name)!.port
const ESM = `
let calls = 0
export async function authenticate({ mechanism, username, password, listener }) {
  calls++
  if (username === 'boom') throw new Error('directory unreachable while checking ' + password)
  if (username === 'reject') return Promise.reject(new Error('no'))
  await new Promise((r) => setTimeout(r, 5))
  return mechanism === 'PLAIN' && username === 'dyn' && password === 'dyn-' + listener.toLowerCase()
}
export function count() { return calls }
`
const CJS = `module.exports = { authenticate({ username, password }) { return username === 'cjs' && password === 'cjs-pw' } }\n`

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tidelog-callback-'))
  writeFileSync(join(dir, 'plain-auth.mjs'), ESM)
  writeFileSync(join(dir, 'plain-auth.cjs'), CJS)
  broker = await startBroker({
    dataDir: join(dir, 'data'),
    listeners: 'SASL_PLAINTEXT://127.0.0.1:0,PARTNER://127.0.0.1:0',
    listenerSecurityProtocolMap: 'SASL_PLAINTEXT:SASL_PLAINTEXT,PARTNER:SASL_PLAINTEXT',
    saslEnabledMechanisms: 'PLAIN',
    saslServerCallbackHandlerClass: join(dir, 'plain-auth.mjs'),
    listenerNameConfigs: { 'listener.name.partner.plain.sasl.server.callback.handler.class': join(dir, 'plain-auth.cjs') },
    connectionFailedAuthenticationDelayMs: 0,
    logger: log.logger,
  })
})

afterAll(async () => {
  await broker?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('sasl.server.callback.handler.class', () => {
  it('lets the module decide, with the listener it came in on; a producer logs in and writes', async () => {
    const c = await RawClient.connect(port('SASL_PLAINTEXT'))
    expect(await login(c, 'PLAIN', 'dyn', 'dyn-sasl_plaintext')).toMatchObject({ errorCode: 0 })
    c.close()
    const wrong = await RawClient.connect(port('SASL_PLAINTEXT'))
    expect(await login(wrong, 'PLAIN', 'dyn', 'dyn-partner')).toMatchObject({
      errorCode: ErrorCodes.SASL_AUTHENTICATION_FAILED,
      errorMessage: 'Authentication failed: Invalid username or password',
    })
    const producer = new Producer({ brokers: [`127.0.0.1:${port('SASL_PLAINTEXT')}`], sasl: { mechanism: 'PLAIN', username: 'dyn', password: 'dyn-sasl_plaintext' }, acks: 1 })
    try {
      expect((await producer.send({ topic: 'handled', value: Buffer.from('x') })).topic).toBe('handled')
    } finally {
      await producer.close()
    }
  })

  it('uses the listener\'s own CommonJS handler there, and only there', async () => {
    expect((await login(await RawClient.connect(port('PARTNER')), 'PLAIN', 'cjs', 'cjs-pw')).errorCode).toBe(0)
    expect((await login(await RawClient.connect(port('PARTNER')), 'PLAIN', 'dyn', 'dyn-partner')).errorCode).toBe(ErrorCodes.SASL_AUTHENTICATION_FAILED)
    expect((await login(await RawClient.connect(port('SASL_PLAINTEXT')), 'PLAIN', 'cjs', 'cjs-pw')).errorCode).toBe(ErrorCodes.SASL_AUTHENTICATION_FAILED)
  })

  it('a throwing or rejecting handler fails that login only; the password is not logged; the broker keeps serving', async () => {
    const secret = 'hunter2-very-secret'
    for (const user of ['boom', 'reject']) {
      const c = await RawClient.connect(port('SASL_PLAINTEXT'))
      expect(await login(c, 'PLAIN', user, secret)).toMatchObject({ errorCode: ErrorCodes.SASL_AUTHENTICATION_FAILED, errorMessage: 'Authentication failed: Invalid username or password' })
      await c.closed
    }
    expect(log.lines.some((l) => l.includes('directory unreachable while checking ***'))).toBe(true)
    expect(log.lines.some((l) => l.includes(secret))).toBe(false)
    expect((await login(await RawClient.connect(port('SASL_PLAINTEXT')), 'PLAIN', 'dyn', 'dyn-sasl_plaintext')).errorCode).toBe(0)
  })

  it('answers SaslHandshake v0\'s bare token once the handler has decided', async () => {
    const handshakeV0 = async (token: string): Promise<{ socket: Socket; answer: Promise<Buffer> }> => {
      const socket = connect(port('SASL_PLAINTEXT'), '127.0.0.1')
      await new Promise((r) => socket.once('connect', r))
      const chunks: Buffer[] = []
      const want = (n: number) => new Promise<Buffer>((resolve) => {
        const check = () => {
          const all = Buffer.concat(chunks)
          if (all.length >= n) {
            socket.off('data', onData)
            chunks.splice(0, chunks.length, all.subarray(n))
            resolve(all.subarray(0, n))
          }
        }
        const onData = (d: Buffer) => {
          chunks.push(d)
          check()
        }
        socket.on('data', onData)
        check()
      })
      socket.write(encodeRequestFrame({ apiKey: ApiKeys.SaslHandshake, apiVersion: 0, correlationId: 1, clientId: 'v0' }, { mechanism: 'PLAIN' }))
      const size = (await want(4)).readInt32BE(0)
      await want(size)
      const t = Buffer.from(token)
      socket.write(Buffer.concat([Buffer.from([0, 0, 0, t.length]), t]))
      return { socket, answer: want(4) }
    }
    const ok = await handshakeV0('\0dyn\0dyn-sasl_plaintext')
    // An empty challenge, length-prefixed: PLAIN is done in one message.
    expect(await ok.answer).toEqual(Buffer.from([0, 0, 0, 0]))
    ok.socket.destroy()
    const bad = await handshakeV0('\0dyn\0nope')
    // No frame can carry the error after a v0 handshake: Kafka closes the connection.
    await new Promise((r) => bad.socket.once('close', r))
  })

  it.each([
    ['a missing file', 'nowhere.mjs', '', /sasl.server.callback.handler.class: .*nowhere.mjs does not exist/],
    ['a module without authenticate', 'empty.mjs', 'export const x = 1\n', /exports no authenticate function/],
    ['a module that does not load', 'broken.mjs', 'export function authenticate( {\n', /cannot load .*broken.mjs/],
  ])('refuses to start with %s, naming the setting', async (_what, file, text, error) => {
    if (text !== '') writeFileSync(join(dir, file), text)
    const data = mkdtempSync(join(tmpdir(), 'tidelog-callback-bad-'))
    try {
      await expect(
        startBroker({ dataDir: data, listeners: 'SASL_PLAINTEXT://127.0.0.1:0', saslEnabledMechanisms: 'PLAIN', saslServerCallbackHandlerClass: join(dir, file), logLevel: 'error' }),
      ).rejects.toThrow(error)
    } finally {
      rmSync(data, { recursive: true, force: true })
    }
  })

  it('refuses a handler for a mechanism that takes none', async () => {
    const data = mkdtempSync(join(tmpdir(), 'tidelog-callback-bad-'))
    try {
      await expect(
        startBroker({
          dataDir: data,
          listeners: 'SASL_PLAINTEXT://127.0.0.1:0',
          logLevel: 'error',
          listenerNameConfigs: { 'listener.name.sasl_plaintext.scram-sha-256.sasl.server.callback.handler.class': join(dir, 'plain-auth.mjs') },
        }),
      ).rejects.toThrow(/only PLAIN takes a callback handler/)
    } finally {
      rmSync(data, { recursive: true, force: true })
    }
  })
})
