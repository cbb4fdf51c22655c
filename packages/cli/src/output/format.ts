import type { Message } from '@tidelog/consumer'
import { UsageError } from '../errors.js'
import { toJson } from './table.js'

type Piece = string | ((m: Message) => string | Buffer)

const text = (b: Buffer | null, nullText: string): string | Buffer => (b === null ? nullText : b)
const headersText = (m: Message): string => m.headers.map((h) => `${h.key}=${h.value === null ? '' : Buffer.from(h.value).toString('utf8')}`).join(',')

// kcat's -f tokens; %S/%K are sizes, -1 for null as kcat prints them.
const TOKENS: Record<string, (m: Message) => string | Buffer> = {
  t: (m) => m.topic,
  p: (m) => String(m.partition),
  o: (m) => m.offset.toString(),
  k: (m) => text(m.key, ''),
  s: (m) => text(m.value, ''),
  K: (m) => String(m.key === null ? -1 : m.key.length),
  S: (m) => String(m.value === null ? -1 : m.value.length),
  T: (m) => m.timestamp.toString(),
  h: headersText,
}

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', '0': '\0' }

/** Compiles a kcat-style format (`%k %s %p %o %T %h %t %K %S`, `\n \t \r \\`, `%%`) once. */
export function compileFormat(format: string): (m: Message) => Buffer {
  const pieces: Piece[] = []
  let lit = ''
  for (let i = 0; i < format.length; i++) {
    const c = format[i]!
    if (c === '\\' && i + 1 < format.length && ESCAPES[format[i + 1]!] !== undefined) {
      lit += ESCAPES[format[++i]!]
    } else if (c === '%') {
      const t = format[++i]
      if (t === '%') lit += '%'
      else if (t !== undefined && TOKENS[t] !== undefined) {
        if (lit !== '') pieces.push(lit)
        lit = ''
        pieces.push(TOKENS[t]!)
      } else throw new UsageError(`--format: unknown token %${t ?? ''} (known: %t %p %o %k %s %K %S %T %h %%)`)
    } else lit += c
  }
  if (lit !== '') pieces.push(lit)
  return (m) =>
    Buffer.concat(
      pieces.map((p) => {
        const v = typeof p === 'string' ? p : p(m)
        return typeof v === 'string' ? Buffer.from(v) : v
      }),
    )
}

const utf8 = (b: Buffer | Uint8Array | null): string | null => (b === null ? null : Buffer.from(b).toString('utf8'))

/** kcat -J's envelope, one object a line; headers as kcat lists them: [name, value, name, value, ...]. */
export function jsonLine(m: Message): Buffer {
  return Buffer.from(
    toJson({
      topic: m.topic,
      partition: m.partition,
      offset: m.offset,
      tstype: m.timestampType === 1 ? 'logappend' : 'create',
      ts: m.timestamp,
      headers: m.headers.flatMap((h) => [h.key, utf8(h.value)]),
      key: utf8(m.key),
      payload: utf8(m.value),
    }) + '\n',
  )
}
