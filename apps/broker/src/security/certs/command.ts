import { relative } from 'node:path'
import { CertificateError, type DevCertificateFiles, type KeyType, generateDevCertificates } from './generate.js'

export const CERTS_HELP = `Usage: tidelog-broker certs [--dir DIR] [--san NAME]... [options]

Writes development certificates for SSL and SASL_SSL listeners: a CA, a server certificate
it signs for localhost, 127.0.0.1 and ::1 (so Java's default hostname check passes), and a
client certificate for mTLS. A CA already in DIR signs the new certificates, so clients
that trust it keep working; a running broker picks up the new server files by itself.

  --dir DIR          where to write them (default ./certs)
  --san NAME         another host name or IP address for the server certificate;
                     repeat it or separate with commas (DNS:/IP: prefixes are accepted)
  --days N           validity of the server and client certificates (default 365; CA x10)
  --key-type T       ec (P-256, default) or rsa (2048 bits)
  --client-name CN   the client certificate's common name (default client)
  --password P       password of the .p12 stores (default: random, in DIR/store-password)
  --force            replace server and client files already in DIR
  -h, --help         this text
`

export class CertsUsageError extends Error {}

interface CertsArgs {
  help: boolean
  dir: string
  sans: string[]
  days?: number
  keyType?: KeyType
  clientName?: string
  password?: string
  force: boolean
}

export function parseCertsArgs(argv: readonly string[]): CertsArgs {
  const out: CertsArgs = { help: false, dir: 'certs', sans: [], force: false }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    const eq = arg.indexOf('=')
    const flag = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg
    const value = (): string => {
      if (arg.startsWith('--') && eq > 0) return arg.slice(eq + 1)
      const v = argv[++i]
      if (v === undefined || v.startsWith('--')) throw new CertsUsageError(`${flag} needs a value`)
      return v
    }
    switch (flag) {
      case '-h':
      case '--help':
        out.help = true
        break
      case '--dir':
        out.dir = value()
        break
      case '--san':
        out.sans.push(...value().split(','))
        break
      case '--days': {
        const v = value()
        if (!/^\d+$/.test(v)) throw new CertsUsageError(`--days must be a whole number of days, got ${JSON.stringify(v)}`)
        out.days = Number(v)
        break
      }
      case '--key-type': {
        const v = value().toLowerCase()
        if (v !== 'ec' && v !== 'rsa') throw new CertsUsageError(`--key-type must be ec or rsa, got ${JSON.stringify(v)}`)
        out.keyType = v
        break
      }
      case '--client-name':
        out.clientName = value()
        break
      case '--password':
        out.password = value()
        break
      case '--force':
        out.force = true
        break
      default:
        throw new CertsUsageError(`unknown option ${JSON.stringify(arg)} (tidelog-broker certs --help lists them)`)
    }
  }
  return out
}

/** What the command prints: each file's use, and the flags and client settings that take them. */
export function certsSummary(f: DevCertificateFiles, cwd: string = process.cwd()): string {
  const r = (p: string) => {
    const rel = relative(cwd, p)
    return rel.startsWith('..') ? p : rel
  }
  const names = [...f.dnsNames.map((d) => `DNS:${d}`), ...f.ipAddresses.map((ip) => `IP:${ip}`)].join(', ')
  return [
    `${f.reusedCa ? 'signed with the existing CA' : 'new CA'} ${r(f.caCert)}; server certificate for ${names}`,
    `broker:        --ssl-keystore-location ${r(f.serverKeystore)}   (or --ssl-keystore-type PKCS12 --ssl-keystore-location ${r(f.serverP12)} --ssl-keystore-password <${r(f.passwordFile)}>)`,
    `mTLS broker:   add --ssl-truststore-location ${r(f.caCert)} --ssl-client-auth required`,
    `Java clients:  ssl.truststore.type=PEM ssl.truststore.location=${f.caCert}   (or PKCS12 ${r(f.truststoreP12)}); SSL with mTLS: ${r(f.clientProperties)}`,
    `kcat, librdkafka: ssl.ca.location=${r(f.caCert)}; mTLS: ssl.key.location=${r(f.clientKey)} ssl.certificate.location=${r(f.clientCert)}`,
    `node, tidelog:  --ssl-ca ${r(f.caCert)}; mTLS: --ssl-cert ${r(f.clientCert)} --ssl-key ${r(f.clientKey)}`,
    '',
  ].join('\n')
}

/** `tidelog-broker certs ...`: the exit code (2 for a usage error, 1 when the files cannot be made). */
export function runCertsCommand(argv: readonly string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): number {
  let args: CertsArgs
  try {
    args = parseCertsArgs(argv)
  } catch (e) {
    if (!(e instanceof CertsUsageError)) throw e
    err.write(`tidelog-broker certs: ${e.message}\n`)
    return 2
  }
  if (args.help) {
    out.write(CERTS_HELP)
    return 0
  }
  try {
    const files = generateDevCertificates({
      dir: args.dir, sans: args.sans, force: args.force,
      ...(args.days !== undefined ? { days: args.days } : {}),
      ...(args.keyType !== undefined ? { keyType: args.keyType } : {}),
      ...(args.clientName !== undefined ? { clientName: args.clientName } : {}),
      ...(args.password !== undefined ? { password: args.password } : {}),
    })
    out.write(certsSummary(files))
    return 0
  } catch (e) {
    const usage = e instanceof CertificateError
    err.write(`tidelog-broker certs: ${(e as Error).message}\n`)
    return usage ? 2 : 1
  }
}
