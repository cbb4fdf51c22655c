/**
 * The record behind the README's compatibility table: which peer, at which version,
 * a passing test actually ran against. Versions are what the peer reports at run time
 * (`kcat -V`, `zstd -V`, a Python module's version, kafkajs's package.json, the
 * version file inside the kafka-clients jar the JVM loads), never what a test asked for.
 *
 * Each test file's record is test/interop/peers/<file>.json, rewritten (sorted, no
 * timestamps, so a rerun that sees the same peers changes nothing) every time one of its
 * tests passes after recording. When TIDELOG_PEERS_RUN names a directory, the same
 * record also goes there: .ci/run points it at an empty folder and then checks that
 * folder (scripts/compat-matrix.ts --check-run), so a row whose peer this run did not
 * exercise fails CI even though the committed record still lists it.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { afterEach, onTestFinished, type TestContext } from 'vitest'
import { PEERS, RECORD_DIR, recordName, root, type Peer, type PeerRecord, type PeerUse } from './peer-record.js'

export { cliVersion, kafkajsVersion, kafkaLibsVersion, kcatVersion, pythonVersion } from './peer-versions.js'
export { PEERS, RECORD_DIR, readRecords, recordName, type Peer, type PeerRecord, type PeerUse } from './peer-record.js'

const recorded: PeerRecord[] = []

function write(testFile: string): void {
  const unique = new Map(recorded.map((r) => [`${r.peer}\0${r.version}\0${r.test}`, r]))
  const records = [...unique.values()].sort((a, b) =>
    a.test < b.test ? -1 : a.test > b.test ? 1 : a.peer < b.peer ? -1 : a.peer > b.peer ? 1 : a.version < b.version ? -1 : 1,
  )
  const text = JSON.stringify({ file: testFile, records }, null, 2) + '\n'
  const dirs = [RECORD_DIR, process.env.TIDELOG_PEERS_RUN].filter((d): d is string => !!d)
  for (const d of dirs) {
    mkdirSync(d, { recursive: true })
    // Renamed into place: test/readme.test.ts may read the record while npm test runs this file.
    const file = join(d, recordName(testFile))
    writeFileSync(`${file}.${process.pid}.tmp`, text)
    renameSync(`${file}.${process.pid}.tmp`, file)
  }
}

type Task = TestContext['task']

/** "describe > ... > title", as vitest prints it. */
function fullName(task: Task): string {
  const names = [task.name]
  for (let s = task.suite; s && !('filepath' in s); s = s.suite) names.unshift(s.name)
  return names.join(' > ')
}

function add(task: Task, uses: PeerUse[]): void {
  const testFile = relative(root, task.file.filepath).replaceAll('\\', '/')
  const test = fullName(task)
  for (const u of uses) {
    if (!PEERS.includes(u.peer)) throw new Error(`unknown peer ${u.peer}`)
    if (!/\d/.test(u.version)) throw new Error(`${u.peer}: "${u.version}" is not a version`)
    recorded.push({ peer: u.peer, version: u.version, test })
  }
  write(testFile)
}

/** Inside a test: once this test passes, it is on record as having run against `peer` at `version`. */
export function recordPeer(peer: Peer, version: string): void {
  onTestFinished(({ task }) => {
    if (task.result?.state === 'pass') add(task, [{ peer, version }])
  })
}

/**
 * In a describe block (or a file's top level): every test there that passes is on
 * record as having run against what `uses()` returns then (nothing, while a peer is not
 * up: a test that skipped never records).
 */
export function recordsPeers(uses: () => PeerUse[] | undefined): void {
  afterEach(({ task }) => {
    if (task.result?.state !== 'pass') return
    const u = uses()
    if (u?.length) add(task, u)
  })
}

/** A started Apache Kafka (single node or cluster) as a peer use, for recordsPeers(). */
export function kafkaUse(kafka: { runtimeVersion: string } | undefined): PeerUse[] | undefined {
  return kafka && [{ peer: 'Apache Kafka', version: kafka.runtimeVersion }]
}
