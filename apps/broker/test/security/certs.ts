import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export interface TestCertificates {
  dir: string
  /** The CA that signed the broker's and the good client's certificates (PEM file). */
  caFile: string
  ca: string
  /** Key + chain in one PEM file, as ssl-keystore-location takes it. */
  brokerKeystore: string
  client: { key: string; cert: string; keyFile: string; certFile: string }
  /** Signed by another CA: must be refused by a broker that trusts only `ca`. */
  rogue: { key: string; cert: string }
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })
}

/**
 * A CA, a broker certificate for localhost / 127.0.0.1 (so hostname checks pass), a client
 * certificate from the same CA and one from a stranger CA, made with openssl in `dir`.
 */
export function makeCertificates(dir: string): TestCertificates {
  const o = (args: string[]): void => openssl(dir, args)
  const ca = (name: string): void => {
    o(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.pem`, '-days', '2', '-subj', `/CN=${name}`])
  }
  ca('ca')
  ca('rogue-ca')
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n')
  const leaf = (name: string, subject: string, signer: string, ext?: string): void => {
    o(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject])
    o(['x509', '-req', '-in', `${name}.csr`, '-CA', `${signer}.pem`, '-CAkey', `${signer}.key`, '-CAcreateserial', '-out', `${name}.pem`, '-days', '2',
      ...(ext !== undefined ? ['-extfile', ext] : [])])
  }
  leaf('broker', '/CN=localhost', 'ca', 'san.ext')
  leaf('client', '/C=US/O=Tidelog Tests/CN=app-one', 'ca')
  leaf('rogue', '/CN=intruder', 'rogue-ca')
  const read = (f: string): string => readFileSync(join(dir, f), 'utf8')
  const brokerKeystore = join(dir, 'broker-keystore.pem')
  writeFileSync(brokerKeystore, read('broker.key') + read('broker.pem'))
  return {
    dir,
    caFile: join(dir, 'ca.pem'),
    ca: read('ca.pem'),
    brokerKeystore,
    client: { key: read('client.key'), cert: read('client.pem'), keyFile: join(dir, 'client.key'), certFile: join(dir, 'client.pem') },
    rogue: { key: read('rogue.key'), cert: read('rogue.pem') },
  }
}
