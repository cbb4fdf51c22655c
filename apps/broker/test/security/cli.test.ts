import { spawn, spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { RawClient } from '../helpers/raw-client.js'
import { tempDir } from '../helpers/tmp.js'
import { makeCertificates } from './certs.js'
import { connectTls, login } from './helpers.js'

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url))
const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url))

describe('tidelog-broker with security flags', () => {
  it('opens the listeners it is given, names them on the ready line, and serves SASL_SSL with PLAIN users from a file', async () => {
    const dir = tempDir()
    const certs = makeCertificates(dir)
    const users = join(dir, 'users.jaas')
    writeFileSync(users, 'KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required user_ops="ops-secret"; };\n')
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, '--data-dir', join(dir, 'data'), '--log-level', 'error',
      '--listeners', 'PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0', '--ssl-keystore-location', certs.brokerKeystore,
      '--sasl-enabled-mechanisms', 'PLAIN', '--sasl-plain-users-file', users], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    try {
      let out = ''
      const ready = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString()
          if (out.includes('\n')) resolve(out)
        })
        child.once('exit', (code) => reject(new Error(`exited ${code}`)))
      })
      const m = /listeners PLAINTEXT:\/\/127\.0\.0\.1:(\d+),SASL_SSL:\/\/127\.0\.0\.1:(\d+)\)$/m.exec(ready)
      expect(m, ready).not.toBeNull()
      const c = await connectTls(Number(m![2]), { ca: certs.ca })
      expect((await login(c, 'PLAIN', 'ops', 'ops-secret')).errorCode).toBe(0)
      c.close()
      const p = await RawClient.connect(Number(m![1]))
      p.close()
    } finally {
      const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
      child.kill('SIGTERM')
      expect(await exit).toBe(0)
    }
  })

  it('exits 2 with a message on a bad listener', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', MAIN, '--listeners', 'PLAINTEXT://127.0.0.1:0,FOO://127.0.0.1:0'], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 })
    expect(r.status).toBe(2)
    expect(r.stderr).toMatch(/FOO has no security protocol/)
  })
})
