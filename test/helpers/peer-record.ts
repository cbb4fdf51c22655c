/**
 * The peer record's shape and where it lives (test/interop/peers/<test file>.json), without
 * vitest, so scripts/compat-matrix.ts can read it outside a test run. test/helpers/peers.ts
 * writes it.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const PEERS = ['Apache Kafka', 'Java client', 'kcat', 'kafka-python', 'confluent-kafka', 'kafkajs', 'zstd CLI', 'lz4 CLI', 'Kafka Connect'] as const
export type Peer = (typeof PEERS)[number]

export interface PeerRecord {
  peer: Peer
  version: string
  /** The test's full name (describe blocks and title, joined by " > "). */
  test: string
}

export interface PeerUse {
  peer: Peer
  version: string
}

export const root = fileURLToPath(new URL('../../', import.meta.url))
export const RECORD_DIR = join(root, 'test', 'interop', 'peers')

/** The record file of a test file given relative to the repo root. */
export function recordName(testFile: string): string {
  return `${testFile.replaceAll('/', '__')}.json`
}

/** Every committed (or freshly written) record under `dir`, by test file. */
export function readRecords(dir: string = RECORD_DIR): Map<string, PeerRecord[]> {
  const out = new Map<string, PeerRecord[]>()
  let names: string[] = []
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.json'))
  } catch {
    return out
  }
  for (const n of names) {
    const { file, records } = JSON.parse(readFileSync(join(dir, n), 'utf8')) as { file: string; records: PeerRecord[] }
    out.set(file, records)
  }
  return out
}

