import { accessSync, constants, createReadStream } from 'node:fs'
import { createInterface } from 'node:readline'
import type { ProducerRecord } from '@tidelog/producer'
import { CliError } from './errors.js'

export type InputMode = { kind: 'line'; keySeparator?: string } | { kind: 'json' } | { kind: 'raw' }

/** What a record is made of, before the topic and the command line's headers are added. */
export type InputRecord = Omit<ProducerRecord, 'topic'>

/** Input that cannot become a record; says where (file and line) and that what came before was sent. */
export class InputError extends CliError {}

interface Source {
  name: string
  open(): NodeJS.ReadableStream
}

export function sources(files: readonly string[], stdin: NodeJS.ReadableStream): Source[] {
  if (files.length === 0 || (files.length === 1 && files[0] === '-')) return [{ name: 'stdin', open: () => stdin }]
  // Every file is checked before the first record is sent, so a typo in the last name sends nothing.
  for (const f of files) {
    if (f === '-') continue
    try {
      accessSync(f, constants.R_OK)
    } catch (e) {
      throw new CliError(`cannot read ${f}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`)
    }
  }
  return files.map((f) => (f === '-' ? { name: 'stdin', open: () => stdin } : { name: f, open: () => createReadStream(f) }))
}

function bytesOf(v: unknown, field: string, where: string): string | null {
  if (v === null || v === undefined) return null
  if (typeof v === 'string') return v
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'object') return JSON.stringify(v)
  throw new InputError(`${where}: "${field}" must be JSON, got ${typeof v}`)
}

// --json lines: {"key": ..., "value": ..., "headers": {...}, "partition": n, "timestamp": ms}; a
// value that is not a string is written as its JSON text, so `jq -c` output goes straight in.
function fromJson(line: string, where: string): InputRecord {
  let o: unknown
  try {
    o = JSON.parse(line)
  } catch (e) {
    throw new InputError(`${where}: not JSON (${(e as Error).message})`)
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new InputError(`${where}: expected a JSON object like {"key":"k","value":"v"}`)
  const r = o as Record<string, unknown>
  const unknown = Object.keys(r).filter((k) => !['key', 'value', 'headers', 'partition', 'timestamp'].includes(k))
  if (unknown.length > 0) throw new InputError(`${where}: unknown field ${JSON.stringify(unknown[0])} (fields: key, value, headers, partition, timestamp)`)
  if (!('value' in r)) throw new InputError(`${where}: "value" is missing (null writes a tombstone)`)
  const rec: InputRecord = { key: bytesOf(r.key, 'key', where), value: bytesOf(r.value, 'value', where) }
  if (r.headers !== undefined) {
    if (typeof r.headers !== 'object' || r.headers === null || Array.isArray(r.headers)) throw new InputError(`${where}: "headers" must be an object of strings`)
    rec.headers = Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, bytesOf(v, `headers.${k}`, where)]))
  }
  if (r.partition !== undefined) {
    if (!Number.isInteger(r.partition) || (r.partition as number) < 0) throw new InputError(`${where}: "partition" must be a non-negative integer`)
    rec.partition = r.partition as number
  }
  if (r.timestamp !== undefined) {
    if (!Number.isInteger(r.timestamp) || (r.timestamp as number) < 0) throw new InputError(`${where}: "timestamp" must be milliseconds since the epoch`)
    rec.timestamp = r.timestamp as number
  }
  return rec
}

function fromLine(line: string, mode: { keySeparator?: string }, where: string): InputRecord {
  if (mode.keySeparator === undefined) return { value: line }
  const at = line.indexOf(mode.keySeparator)
  // kafka-console-producer.sh refuses such a line too ("No key separator found").
  if (at < 0) throw new InputError(`${where}: no key separator ${JSON.stringify(mode.keySeparator)} found`)
  return { key: line.slice(0, at), value: line.slice(at + mode.keySeparator.length) }
}

/** Records from each source in turn: a line each (text or JSON), or the whole source as one (raw). */
export async function* readRecords(list: readonly Source[], mode: InputMode): AsyncGenerator<InputRecord> {
  for (const src of list) {
    const stream = src.open()
    if (mode.kind === 'raw') {
      const chunks: Buffer[] = []
      for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer))
      yield { value: Buffer.concat(chunks) }
      continue
    }
    const lines = createInterface({ input: stream, crlfDelay: Infinity })
    let n = 0
    for await (const line of lines) {
      n++
      const where = `${src.name} line ${n}`
      if (mode.kind === 'json') {
        if (line.trim() === '') continue
        yield fromJson(line, where)
      } else yield fromLine(line, mode, where)
    }
  }
}
