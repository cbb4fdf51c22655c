/**
 * Store engines side by side: the in-memory store, the LMDB persistent store, and a plain
 * append-only file (a log replayed into a Map on open: what "persistent" costs at its cheapest).
 * Rates are operations per second through the typed store API (String keys, Long values), with a
 * flush every 1,000 writes (a commit; LMDB and the file both fsync there). Run: `npx tsx packages/streams/bench/stores.ts [keys]`.
 * One machine, one run: compare the columns, not the absolute numbers.
 */
import { closeSync, fsyncSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InMemoryKeyValueStore, PersistentKeyValueStore, Serdes, TaskId, type KeyValueStore, type StateStoreContext } from '../src/index.js'

const N = Number(process.argv[2] ?? 100_000)
const S = Serdes.String()
const L = Serdes.Long()
const key = (i: number) => `key-${(i * 7919) % N}`.padEnd(12, '.')

function ctx(stateDir?: string): StateStoreContext {
  return { applicationId: 'bench', taskId: new TaskId(0, 0), logChange: () => {}, currentTimestamp: () => 0, ...(stateDir ? { stateDir } : {}) }
}

function rate(n: number, fn: () => void): number {
  const t = process.hrtime.bigint()
  fn()
  return Math.round(n / (Number(process.hrtime.bigint() - t) / 1e9))
}

/** The append-only file: each put is `[4-byte key length][key][8-byte value]` appended; open replays the file. */
class AppendOnlyFile {
  private readonly map = new Map<string, number>()
  private fd: number
  private buf: Buffer[] = []
  constructor(private readonly file: string) {
    this.fd = openSync(file, 'a')
  }
  put(k: string, v: number): void {
    this.map.set(k, v)
    const kb = Buffer.from(k)
    const rec = Buffer.alloc(12 + kb.length)
    rec.writeInt32BE(kb.length)
    kb.copy(rec, 4)
    rec.writeBigInt64BE(BigInt(v), 4 + kb.length)
    this.buf.push(rec)
  }
  get(k: string): number | undefined {
    return this.map.get(k)
  }
  flush(): void {
    if (this.buf.length > 0) {
      writeSync(this.fd, Buffer.concat(this.buf))
      fsyncSync(this.fd)
    }
    this.buf = []
  }
  close(): void {
    this.flush()
    closeSync(this.fd)
  }
  static replay(file: string): Map<string, number> {
    const data = readFileSync(file)
    const out = new Map<string, number>()
    for (let at = 0; at < data.length;) {
      const n = data.readInt32BE(at)
      out.set(data.toString('utf8', at + 4, at + 4 + n), Number(data.readBigInt64BE(at + 4 + n)))
      at += 12 + n
    }
    return out
  }
}

function kvRow(name: string, make: () => KeyValueStore<string, number> & { restore(k: Buffer, v: Buffer | null): void }) {
  const s = make()
  const put = rate(N, () => {
    for (let i = 0; i < N; i++) {
      s.put(key(i), i)
      if (i % 1000 === 999) s.flush()
    }
    s.flush()
  })
  const get = rate(N, () => {
    for (let i = 0; i < N; i++) s.get(key(i))
  })
  const sorted = Array.from({ length: N }, (_, i) => key(i)).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
  const ranges = Math.min(2000, Math.floor(N / 100))
  let scanned = 0
  const range = rate(ranges * 100, () => {
    for (let i = 0; i < ranges; i++) scanned += s.range(sorted[i * 100]!, sorted[i * 100 + 99]!).length
  })
  if (scanned !== ranges * 100) throw new Error(`a range scan returned ${scanned} entries, not ${ranges * 100}`)
  const all = rate(N, () => s.all())
  const records = s.all().map((e) => [Buffer.from(e.key), Buffer.alloc(8)] as const)
  s.close()
  const r = make()
  const restore = rate(records.length, () => {
    for (const [k, v] of records) r.restore(k, v)
    r.flush()
  })
  r.close()
  return { name, put, get, range, all, restore }
}

const dir = mkdtempSync(join(tmpdir(), 'tidelog-store-bench-'))
try {
  const rows = [
    kvRow('in-memory', () => {
      const s = new InMemoryKeyValueStore<string, number>('m', S, L, false)
      s.init(ctx())
      return s
    }),
    kvRow('lmdb (persistent)', () => {
      const s = new PersistentKeyValueStore<string, number>('p', S, L, false)
      s.init(ctx(join(dir, 'lmdb')))
      return s
    }),
  ]
  const file = join(dir, 'append.log')
  const f = new AppendOnlyFile(file)
  const put = rate(N, () => {
    for (let i = 0; i < N; i++) {
      f.put(key(i), i)
      if (i % 1000 === 999) f.flush()
    }
    f.flush()
  })
  const get = rate(N, () => {
    for (let i = 0; i < N; i++) f.get(key(i))
  })
  f.close()
  const restore = rate(N, () => AppendOnlyFile.replay(file))
  console.log(`${N} keys; ops/s (range: entries/s of 100-entry scans; restore: changelog records/s; file reopen: log records/s)`)
  console.log('| engine | put | get | range | all | restore / reopen |')
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |')
  for (const r of rows) console.log(`| ${r.name} | ${r.put} | ${r.get} | ${r.range} | ${r.all} | ${r.restore} |`)
  console.log(`| append-only file | ${put} | ${get} | (none: unsorted) | (none) | ${restore} |`)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
