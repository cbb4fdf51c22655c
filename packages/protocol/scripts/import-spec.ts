/**
 * Imports the wire-format facts of the Kafka message definitions tidelog speaks into spec/.
 *
 *   npx tsx scripts/import-spec.ts <kafka>/clients/src/main/resources/common/message
 *
 * Kafka's files are JSON with // comments and prose ("about"). Only facts are kept: names,
 * types, version ranges, nullability, tags, defaults, ignorability. The output is committed,
 * so the build (scripts/generate.ts) never needs the Kafka sources.
 */
import { readFileSync, writeFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs'
import { join, dirname, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

/** The APIs tidelog implements (each as its Request and Response file). */
export const API_NAMES = [
  'Produce', 'Fetch', 'ListOffsets', 'Metadata', 'OffsetCommit', 'OffsetFetch', 'FindCoordinator',
  'JoinGroup', 'Heartbeat', 'LeaveGroup', 'SyncGroup', 'DescribeGroups', 'ListGroups',
  'SaslHandshake', 'ApiVersions', 'CreateTopics', 'DeleteTopics', 'DeleteRecords', 'InitProducerId',
  'OffsetForLeaderEpoch', 'AddPartitionsToTxn', 'AddOffsetsToTxn', 'EndTxn', 'TxnOffsetCommit',
  'DescribeConfigs', 'AlterConfigs', 'SaslAuthenticate', 'CreatePartitions', 'DeleteGroups',
  'IncrementalAlterConfigs', 'OffsetDelete', 'DescribeCluster', 'ConsumerGroupHeartbeat',
  'WriteTxnMarkers', 'DescribeProducers', 'DescribeTransactions', 'ListTransactions',
  'DescribeAcls', 'CreateAcls', 'DeleteAcls', 'DescribeLogDirs', 'AlterPartitionReassignments',
  'ListPartitionReassignments', 'DescribeClientQuotas', 'AlterClientQuotas',
  'DescribeUserScramCredentials', 'AlterUserScramCredentials',
  'ShareGroupHeartbeat', 'ShareGroupDescribe', 'ShareFetch', 'ShareAcknowledge',
  'ListConfigResources',
] as const

/**
 * APIs whose definitions come from a later Kafka release than the snapshot above: the KIP-932
 * share-group APIs were unstable (v0) in the 4.0 snapshot and became v1 (ShareFetch and
 * ShareAcknowledge v2) when Kafka 4.1/4.2 made share groups production-ready. Imported from the
 * directory given as the second argument (Kafka 4.4's definitions). ListConfigResources is the
 * 4.0 snapshot's ListClientMetricsResources renamed, with v1 (resource types, KIP-1142, Kafka 4.1).
 */
export const LATER_API_NAMES: ReadonlySet<string> = new Set([
  'ShareGroupHeartbeat', 'ShareGroupDescribe', 'ShareFetch', 'ShareAcknowledge', 'ListConfigResources',
])

/**
 * Versions Kafka added after the definitions' snapshot (4.0.0-SNAPSHOT, October 2024) without
 * changing a field: the 4.0 release's own definitions say so ("Version 12 is the same as version
 * 11 (KIP-890)"). Only the range widens, so the generated codec is unchanged for older versions.
 * Produce v12 and TxnOffsetCommit v5 tell the broker the client speaks transaction version 2.
 */
export const SAME_SHAPE_VERSIONS: Record<string, number> = {
  ProduceRequest: 12,
  ProduceResponse: 12,
  TxnOffsetCommitRequest: 5,
  TxnOffsetCommitResponse: 5,
}

function widen(spec: Json): Json {
  const top = SAME_SHAPE_VERSIONS[spec.name as string]
  if (top === undefined) return spec
  const [lo] = String(spec.validVersions).split('-')
  return { ...spec, validVersions: `${lo}-${top}` }
}

/** Versioned structures that are not API messages. */
export const OTHER_NAMES = [
  'RequestHeader', 'ResponseHeader', 'ConsumerProtocolSubscription', 'ConsumerProtocolAssignment',
] as const

const MESSAGE_KEYS = [
  'apiKey', 'type', 'name', 'validVersions', 'deprecatedVersions', 'flexibleVersions',
  'latestVersionUnstable', 'fields', 'commonStructs',
] as const
const FIELD_KEYS = [
  'name', 'type', 'versions', 'nullableVersions', 'taggedVersions', 'tag', 'flexibleVersions',
  'default', 'ignorable', 'fields',
] as const
const STRUCT_KEYS = ['name', 'versions', 'fields'] as const

/** Removes // comments outside string literals (string values may themselves contain "//"). */
export function stripComments(text: string): string {
  let out = ''
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (inString) {
      out += c
      if (c === '\\') out += text[++i] ?? ''
      else if (c === '"') inString = false
    } else if (c === '"') {
      inString = true
      out += c
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++
      out += '\n'
    } else {
      out += c
    }
  }
  return out
}

type Json = Record<string, unknown>

function pick(obj: Json, keys: readonly string[], map: (key: string, v: unknown) => unknown): Json {
  const out: Json = {}
  for (const k of keys) if (obj[k] !== undefined) out[k] = map(k, obj[k])
  return out
}

function field(f: Json): Json {
  return pick(f, FIELD_KEYS, (k, v) => (k === 'fields' ? (v as Json[]).map(field) : v))
}

function struct(s: Json): Json {
  return pick(s, STRUCT_KEYS, (k, v) => (k === 'fields' ? (v as Json[]).map(field) : v))
}

export function importMessage(text: string): Json {
  const raw = JSON.parse(stripComments(text)) as Json
  return pick(raw, MESSAGE_KEYS, (k, v) => {
    if (k === 'fields') return (v as Json[]).map(field)
    if (k === 'commonStructs') return (v as Json[]).map(struct)
    return v
  })
}

/** One field per line: small diffs when Kafka changes a definition. */
export function formatSpec(spec: Json): string {
  const lines: string[] = []
  const fieldLines = (fields: Json[], indent: string): void => {
    fields.forEach((f, i) => {
      const comma = i < fields.length - 1 ? ',' : ''
      const { fields: sub, ...rest } = f
      if (sub === undefined) {
        lines.push(`${indent}${JSON.stringify(rest)}${comma}`)
      } else {
        const head = JSON.stringify(rest).slice(0, -1)
        lines.push(`${indent}${head},"fields":[`)
        fieldLines(sub as Json[], indent + '  ')
        lines.push(`${indent}]}${comma}`)
      }
    })
  }
  const { fields, commonStructs, ...top } = spec
  lines.push(`${JSON.stringify(top).slice(0, -1)},"fields":[`)
  fieldLines(fields as Json[], '  ')
  if (commonStructs === undefined) {
    lines.push(']}')
  } else {
    lines.push('],"commonStructs":[')
    fieldLines(commonStructs as Json[], '  ')
    lines.push(']}')
  }
  return lines.join('\n') + '\n'
}

function main(): void {
  const src = process.argv[2]
  const later = process.argv[3]
  if (src === undefined || later === undefined) {
    console.error('usage: tsx scripts/import-spec.ts <Kafka 4.0-snapshot message definitions> <Kafka 4.4 message definitions>')
    process.exit(2)
  }
  const out = join(dirname(fileURLToPath(import.meta.url)), '..', 'spec')
  mkdirSync(out, { recursive: true })
  for (const f of readdirSync(out)) if (f.endsWith('.json')) rmSync(join(out, f))
  const names = [...OTHER_NAMES, ...API_NAMES.flatMap((n) => [`${n}Request`, `${n}Response`])]
  for (const name of names) {
    const dir = LATER_API_NAMES.has(name.replace(/(Request|Response)$/, '')) ? later : src
    const spec = widen(importMessage(readFileSync(join(dir, `${name}.json`), 'utf8')))
    if (spec.name !== name) throw new Error(`${name}.json declares ${String(spec.name)}`)
    writeFileSync(join(out, `${name}.json`), formatSpec(spec))
  }
  console.log(`wrote ${names.length} definitions to ${out}`)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) main()
