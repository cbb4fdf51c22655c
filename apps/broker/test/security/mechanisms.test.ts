import { createHash, createHmac } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { scramKeysSync } from '@tidelog/protocol'
import { silentLogger } from '../../src/logger.js'
import { ScramCredentialStore } from '../../src/security/credentials.js'
import { PlainServer, SaslFailure, ScramServer, plainUsersCheck } from '../../src/security/mechanisms.js'
import { tempDir } from '../helpers/tmp.js'

function storeWith(user: string, password: string, salt: Buffer) {
  const store = new ScramCredentialStore(tempDir(), silentLogger)
  const k = scramKeysSync('sha256', password, salt, 4096)
  store.apply([{ user, mechanism: 'SCRAM-SHA-256', credential: { salt, storedKey: k.storedKey, serverKey: k.serverKey, iterations: 4096 } }])
  return store
}

describe('ScramServer', () => {
  // RFC 7677 section 3: the SCRAM-SHA-256 example exchange, played from the server's side.
  const salt = Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64')
  const nonce = 'rOprNGfwEbeRWgbNEkqO'
  const serverPart = '%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0'

  it('answers the RFC 7677 example byte for byte', () => {
    const s = new ScramServer('SCRAM-SHA-256', storeWith('user', 'pencil', salt), () => serverPart)
    expect(s.evaluate(Buffer.from(`n,,n=user,r=${nonce}`)).toString()).toBe(`r=${nonce}${serverPart},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096`)
    const final = s.evaluate(Buffer.from(`c=biws,r=${nonce}${serverPart},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=`))
    expect(final.toString()).toBe('v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=')
    expect(s.complete).toBe(true)
    expect(s.authorizationId).toBe('user')
  })

  it('refuses a wrong proof, a foreign nonce and a second final message', () => {
    const wrong = new ScramServer('SCRAM-SHA-256', storeWith('user', 'pencil', salt), () => serverPart)
    wrong.evaluate(Buffer.from(`n,,n=user,r=${nonce}`))
    expect(() => wrong.evaluate(Buffer.from(`c=biws,r=${nonce}${serverPart},p=${Buffer.alloc(32).toString('base64')}`))).toThrow(SaslFailure)
    expect(() => wrong.evaluate(Buffer.from('c=biws,r=x,p=AA=='))).toThrow(SaslFailure)
    const foreign = new ScramServer('SCRAM-SHA-256', storeWith('user', 'pencil', salt), () => serverPart)
    foreign.evaluate(Buffer.from(`n,,n=user,r=${nonce}`))
    expect(() => foreign.evaluate(Buffer.from(`c=biws,r=other${serverPart}x,p=AA==`))).toThrow('Invalid client nonce in the final client message.')
  })

  it("accepts librdkafka's final nonce, which repeats the client nonce in front (Kafka checks endsWith)", () => {
    const store = storeWith('user', 'pencil', salt)
    const s = new ScramServer('SCRAM-SHA-256', store, () => serverPart)
    s.evaluate(Buffer.from(`n,,n=user,r=${nonce}`))
    // The proof covers the message as sent, so compute it for the repeated nonce.
    const k = scramKeysSync('sha256', 'pencil', salt, 4096)
    const withoutProof = `c=biws,r=${nonce}${nonce}${serverPart}`
    const authMessage = `n=user,r=${nonce},r=${nonce}${serverPart},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,${withoutProof}`
    const sig = createHmac('sha256', k.storedKey).update(authMessage).digest()
    const proof = Buffer.from(k.clientKey.map((b, i) => b ^ sig[i]!))
    expect(createHash('sha256').update(k.clientKey).digest()).toEqual(k.storedKey)
    expect(s.evaluate(Buffer.from(`${withoutProof},p=${proof.toString('base64')}`)).toString()).toMatch(/^v=/)
    expect(s.complete).toBe(true)
  })
})

describe('PlainServer', () => {
  const users = new Map([['alice', 'secret']])
  it.each([
    ['\0alice\0secret', undefined],
    ['alice\0alice\0secret', undefined],
    ['bob\0alice\0secret', 'Authentication failed: Client requested an authorization id that is different from username'],
    ['\0alice\0nope', 'Authentication failed: Invalid username or password'],
    ['\0\0secret', 'Authentication failed: username not specified'],
    ['\0alice\0', 'Authentication failed: password not specified'],
    ['alice secret', 'Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN'],
  ])('%j', (token, error) => {
    const s = new PlainServer(plainUsersCheck(users))
    if (error === undefined) {
      expect(s.evaluate(Buffer.from(token))).toEqual(Buffer.alloc(0))
      expect(s.authorizationId).toBe('alice')
    } else {
      expect(() => s.evaluate(Buffer.from(token))).toThrow(error)
    }
  })
})
