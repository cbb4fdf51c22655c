/**
 * Refreshes spec/errors/errors.json from an Apache Kafka source tree:
 *
 *   npx tsx scripts/errors/extract.ts <kafka-checkout> [--source "<tree, commit>"]
 *
 * It reads the Errors enum (code, name, default message, exception class) and
 * decides `retriable` the way Kafka's own generated protocol_errors table does:
 * true exactly when the exception class extends RetriableException, following
 * `extends` through the whole client source tree. Codes already in
 * spec/errors/errors.json but absent from the given tree (added by a newer Kafka) are
 * kept, so an older checkout never shrinks the table. Afterwards run
 * scripts/errors/generate.ts. Nothing at build time needs a Kafka tree.
 */
import { readFileSync, readdirSync, statSync, writeFileSync, existsSync, mkdirSync } from 'node:fs'
import { join, dirname, basename } from 'node:path'
import { fileURLToPath } from 'node:url'

export interface ErrorSpecEntry {
  code: number
  name: string
  retriable: boolean
  message: string
  exception: string | null
}

export interface ErrorSpec {
  sources: string[]
  errors: ErrorSpecEntry[]
}

const here = dirname(fileURLToPath(import.meta.url))
export const SPEC_PATH = join(here, '..', '..', 'spec', 'errors', 'errors.json')

const isCommonErrors = (p: string): boolean => /[\\/]common[\\/]errors[\\/]/.test(p)

function javaFiles(dir: string, out: Map<string, string>): void {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) javaFiles(p, out)
    else if (name.endsWith('.java')) {
      // Simple names can repeat across packages (clients.consumer and common.errors
      // both have an OffsetOutOfRangeException); Errors imports from common.errors.
      const cls = basename(name, '.java')
      const prev = out.get(cls)
      if (prev === undefined || (!isCommonErrors(prev) && isCommonErrors(p))) out.set(cls, p)
    }
  }
}

function unquote(literals: string): string {
  let s = ''
  for (const m of literals.matchAll(/"((?:[^"\\]|\\.)*)"/g)) {
    s += JSON.parse(`"${m[1]!.replace(/\\'/g, "'")}"`) as string
  }
  return s
}

function parseEnum(source: string): Array<Omit<ErrorSpecEntry, 'retriable'>> {
  const start = source.indexOf('public enum Errors')
  if (start < 0) throw new Error('enum Errors not found')
  const body = source.slice(start)
  const str = String.raw`"(?:[^"\\]|\\.)*"`
  const entry = new RegExp(
    String.raw`\b([A-Z][A-Z0-9_]*)\(\s*(-?\d+)\s*,\s*(null|${str}(?:\s*\+\s*${str})*)\s*,\s*(?:([A-Za-z0-9_]+)::new\s*|[^)]*)\)\s*([,;])`,
    'g',
  )
  const out: Array<Omit<ErrorSpecEntry, 'retriable'>> = []
  for (const m of body.matchAll(entry)) {
    out.push({
      code: Number(m[2]),
      name: m[1]!,
      message: m[3] === 'null' ? '' : unquote(m[3]!),
      exception: m[4] ?? null,
    })
    if (m[5] === ';') break
  }
  return out
}

function isRetriable(cls: string | null, files: Map<string, string>, seen = new Set<string>()): boolean {
  if (cls === null) return false
  if (cls === 'RetriableException') return true
  if (seen.has(cls)) return false
  seen.add(cls)
  const file = files.get(cls)
  if (file === undefined) return false
  const m = new RegExp(String.raw`class\s+${cls}\b[^{]*?\bextends\s+([A-Za-z0-9_.]+)`).exec(readFileSync(file, 'utf8'))
  if (m === null) return false
  return isRetriable(m[1]!.split('.').pop()!, files, seen)
}

function main(): void {
  const args = process.argv.slice(2)
  const root = args[0]
  if (root === undefined) {
    console.error('usage: tsx scripts/errors/extract.ts <kafka-checkout> [--source "<description>"]')
    process.exit(2)
  }
  const si = args.indexOf('--source')
  const source = si >= 0 ? args[si + 1]! : root
  const javaRoot = join(root, 'clients', 'src', 'main', 'java')
  const files = new Map<string, string>()
  javaFiles(javaRoot, files)
  const errorsJava = files.get('Errors')
  if (errorsJava === undefined) throw new Error(`no Errors.java under ${javaRoot}`)
  const parsed = parseEnum(readFileSync(errorsJava, 'utf8'))
  if (parsed.length < 100) throw new Error(`only ${parsed.length} entries parsed; the enum's layout changed`)

  const fresh = parsed.map((e) => ({ ...e, retriable: isRetriable(e.exception, files) }))
  const previous: ErrorSpec = existsSync(SPEC_PATH)
    ? (JSON.parse(readFileSync(SPEC_PATH, 'utf8')) as ErrorSpec)
    : { sources: [], errors: [] }
  const byCode = new Map<number, ErrorSpecEntry>()
  for (const e of previous.errors) byCode.set(e.code, e)
  for (const e of fresh) byCode.set(e.code, { code: e.code, name: e.name, retriable: e.retriable, message: e.message, exception: e.exception })
  const spec: ErrorSpec = {
    sources: [...new Set([...previous.sources, source])],
    errors: [...byCode.values()].sort((a, b) => a.code - b.code),
  }
  // A directory of its own: spec/*.json are the message definitions, which their
  // importer replaces wholesale.
  mkdirSync(dirname(SPEC_PATH), { recursive: true })
  writeFileSync(SPEC_PATH, JSON.stringify(spec, null, 2) + '\n')
  console.log(`${spec.errors.length} error codes (${fresh.length} from ${source}) -> ${SPEC_PATH}`)
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) main()
