/**
 * A Jepsen-style checker for transactions (issue 11): seeded and bounded. Writers (kafkajs
 * transactional producers, a client no one here wrote, and our own @tidelog/producer; see
 * writers.ts) run transactions that each write one record to several partitions, and commit,
 * abort, crash mid-transaction, race a second producer on the same transactional id, or
 * abandon the transaction to its timeout, while the broker is killed with SIGKILL and, through
 * test/helpers/fault-proxy.ts, connections are cut, stalled and half-closed mid-request. Every
 * transaction's outcome is recorded as the client saw it (committed, aborted, or unknown when
 * the broker or the connection went away under it). A monitor
 * samples each partition's last stable offset meanwhile. At the end Java's read_committed
 * ConsoleConsumer (the reference client) reads everything (and our consumer reads up to the end
 * offsets, so nothing past what Java read goes unseen), and the history is checked:
 *
 * - no aborted read: no record of an aborted transaction is delivered;
 * - no lost committed write: every record of a committed transaction is delivered;
 * - no duplicate: no record is delivered twice;
 * - no torn transaction: a transaction is delivered on all of its partitions or on none
 *   (an unknown outcome may go either way, never half);
 * - read_committed reads never go backwards (offsets rise per partition);
 * - the LSO never regresses, across broker kills too;
 * - no hanging transaction at the end (ListTransactions: nothing Ongoing or Prepare*).
 */
import { ApiKeys } from '@tidelog/protocol'
import { type FaultProxy, type FaultRates, seededRandom } from '../helpers/fault-proxy.js'
import { javaTool } from '../helpers/kafka.js'
import { RawClient } from '../helpers/raw-client.js'
import { readToEnd } from '../helpers/read-to-end.js'
import { type SessionFactory, type TxnSession, type WriterClient, sessionFactory } from './writers.js'

export interface CheckerOptions {
  /** Where the writers connect: the broker, or a fault proxy in front of it. */
  bootstrap: string
  /** The broker itself, for the monitor and the final checks (default: bootstrap). */
  directBootstrap?: string
  topic: string
  partitions: number
  transactions: number
  /** Concurrent writers, each with its own transactional id. */
  writers: number
  /** The client of each writer, cycled (default: all kafkajs). */
  clients?: readonly WriterClient[]
  seed: number
  /** SIGKILL the broker and start it again (same port and data); called `brokerKills` times, spread over the run. */
  killBroker?: () => Promise<void>
  brokerKills?: number
  /** Connection faults while the writers run (off again before the final checks). */
  faults?: { proxy: FaultProxy; rates: FaultRates }
  /** Timeout of the abandoned transactions (they must be aborted by the coordinator). */
  abandonTimeoutMs?: number
  log?: (line: string) => void
}

type Outcome = 'committed' | 'aborted' | 'unknown'
type Action = 'commit' | 'abort' | 'crash' | 'race' | 'abandon'

export interface CheckResult {
  transactions: number
  outcomes: Record<Outcome, number>
  actions: Record<Action, number>
  /** Transactions by the client that wrote them. */
  byClient: Partial<Record<WriterClient, number>>
  brokerKills: number
  /** Faults the proxy struck, by kind and direction (empty without faults). */
  faults: Record<string, number>
  recordsRead: number
  lsoSamples: number
  violations: string[]
  durationMs: number
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

function pickAction(r: number): Action {
  if (r < 0.7) return 'commit'
  if (r < 0.88) return 'abort'
  if (r < 0.94) return 'crash'
  if (r < 0.97) return 'race'
  return 'abandon'
}

export async function runChecker(o: CheckerOptions): Promise<CheckResult> {
  const started = Date.now()
  const log = o.log ?? (() => {})
  const rand = seededRandom(o.seed)
  const clients = o.clients ?? ['kafkajs']
  const factories = new Map<WriterClient, SessionFactory>(clients.map((c) => [c, sessionFactory(c, o.bootstrap)]))
  const parts = new Map<number, number>() // txn -> number of partitions written
  const outcome = new Map<number, Outcome>()
  const actionOf = new Map<number, Action>()
  const actions: Record<Action, number> = { commit: 0, abort: 0, crash: 0, race: 0, abandon: 0 }
  const byClient: Partial<Record<WriterClient, number>> = {}
  const violations: string[] = []
  const abandonTimeoutMs = o.abandonTimeoutMs ?? 3_000
  let next = 0
  let kills = 0
  const leftOpen: TxnSession[] = []

  const send = async (txn: TxnSession, n: number) => {
    const count = 2 + Math.floor(rand() * (o.partitions - 1))
    const chosen = [...Array(o.partitions).keys()].sort(() => rand() - 0.5).slice(0, count)
    parts.set(n, count)
    await txn.send(o.topic, chosen.map((partition) => ({ partition, value: `${n}:${count}` })))
  }

  const writer = async (w: number) => {
    const client = clients[w % clients.length]!
    const open = factories.get(client)!
    const id = `checker-${o.seed}-${w}`
    const reopen = async (): Promise<TxnSession> => {
      for (;;) {
        try {
          return await open(id, 60_000)
        } catch (e) {
          log(`writer ${w} (${client}): init failed: ${(e as Error).message}`)
          await sleep(500)
        }
      }
    }
    let producer = await reopen()
    while (next < o.transactions) {
      const n = next++
      const action = pickAction(rand())
      actions[action]++
      actionOf.set(n, action)
      byClient[client] = (byClient[client] ?? 0) + 1
      let began = false
      try {
        if (action === 'abandon') {
          // Its own transactional id, never used again: only the coordinator's timeout ends it.
          const lone = await open(`checker-${o.seed}-abandoned-${n}`, abandonTimeoutMs)
          leftOpen.push(lone)
          await lone.begin()
          began = true
          await send(lone, n)
          outcome.set(n, 'aborted')
          continue
        }
        await producer.begin()
        began = true
        await send(producer, n)
        if (action === 'commit') {
          try {
            await producer.commit()
          } catch (e) {
            if (!producer.isAbortable(e)) throw e
            // An abortable commit did not commit (Java's TransactionAbortableException): abort, and it must not be read.
            log(`txn ${n} (${client}): commit abortable: ${(e as Error).message}`)
            await producer.abort()
            outcome.set(n, 'aborted')
            continue
          }
          outcome.set(n, 'committed')
        } else if (action === 'abort') {
          await producer.abort()
          outcome.set(n, 'aborted')
        } else if (action === 'crash') {
          // The process dies mid-transaction: its successor's InitProducerId aborts it.
          leftOpen.push(producer)
          producer = await open(id, 60_000)
          await producer.begin()
          await producer.abort()
          outcome.set(n, 'aborted')
        } else {
          // A second producer takes the same transactional id while this one is mid-transaction
          // (KIP-98 zombie fencing): the open transaction is aborted and the old producer's
          // commit must fail.
          const rival = await open(id, 60_000)
          await rival.begin()
          await rival.abort()
          let committed = false
          try {
            await producer.commit()
            committed = true
          } catch {
            // fenced, as it must be
          }
          if (committed) violations.push(`txn ${n}: a fenced producer's commit succeeded`)
          outcome.set(n, committed ? 'committed' : 'aborted')
          leftOpen.push(producer)
          producer = rival
        }
      } catch (e) {
        // The broker or the connection went away under it: the outcome is not known to the client.
        outcome.set(n, 'unknown')
        log(`txn ${n} (${action}, ${client}${began ? '' : ', not begun'}): ${(e as Error).message}`)
        leftOpen.push(producer)
        producer = await reopen()
      }
    }
    await producer.close()
  }

  // The LSO of every partition, sampled until the end; it must never go down.
  const lso = new Array<bigint>(o.partitions).fill(-1n)
  let samples = 0
  let monitoring = true
  const direct = o.directBootstrap ?? o.bootstrap
  const [host, port] = [direct.split(':')[0]!, Number(direct.split(':')[1])]
  const monitor = (async () => {
    let c: RawClient | undefined
    while (monitoring) {
      try {
        c ??= await RawClient.connect(host, port)
        const { body } = await c.request(ApiKeys.ListOffsets, 7, {
          replicaId: -1,
          isolationLevel: 1,
          topics: [{ name: o.topic, partitions: [...Array(o.partitions).keys()].map((partitionIndex) => ({ partitionIndex, currentLeaderEpoch: -1, timestamp: -1n })) }],
        })
        for (const p of body.topics[0].partitions as { partitionIndex: number; errorCode: number; offset: bigint }[]) {
          if (p.errorCode !== 0) continue
          if (p.offset < lso[p.partitionIndex]!) violations.push(`partition ${p.partitionIndex}: LSO went from ${lso[p.partitionIndex]} back to ${p.offset}`)
          if (p.offset > lso[p.partitionIndex]!) lso[p.partitionIndex] = p.offset
          samples++
        }
      } catch {
        c?.close()
        c = undefined
      }
      await sleep(50)
    }
    c?.close()
  })()

  const killer = (async () => {
    const total = o.killBroker ? (o.brokerKills ?? 2) : 0
    for (let k = 1; k <= total; k++) {
      const at = Math.floor((o.transactions * k) / (total + 1))
      while (next < at && next < o.transactions) await sleep(20)
      if (next >= o.transactions) break
      log(`kill -9 the broker at txn ${next}`)
      await o.killBroker!()
      kills++
    }
  })()

  o.faults?.proxy.setFaults(o.faults.rates)
  try {
    await Promise.all([...Array(o.writers).keys()].map(writer))
    await killer
  } finally {
    o.faults?.proxy.setFaults(null)
  }

  // No hanging transaction: everything open (crashed, abandoned) must end by itself.
  const hangDeadline = Date.now() + abandonTimeoutMs + 60_000
  for (;;) {
    let open: string[] = []
    try {
      const c = await RawClient.connect(host, port)
      try {
        const { body } = await c.request(ApiKeys.ListTransactions, 0, { stateFilters: [], producerIdFilters: [] })
        open = (body.transactionStates as { transactionalId: string; transactionState: string }[])
          .filter((t) => t.transactionalId.startsWith(`checker-${o.seed}-`) && !['Empty', 'CompleteCommit', 'CompleteAbort', 'Dead'].includes(t.transactionState))
          .map((t) => `${t.transactionalId}=${t.transactionState}`)
      } finally {
        c.close()
      }
    } catch (e) {
      open = [`ListTransactions failed: ${(e as Error).message}`]
    }
    if (open.length === 0) break
    if (Date.now() > hangDeadline) {
      violations.push(`hanging transactions at the end: ${open.slice(0, 10).join(', ')}${open.length > 10 ? ` (+${open.length - 10})` : ''}`)
      break
    }
    await sleep(500)
  }
  for (const p of leftOpen) await p.drop()
  // Every partition's LSO must reach its high watermark: an open transaction the coordinator
  // no longer tracks (hanging) would hold it back forever.
  const ends = async (isolationLevel: number) => {
    const c = await RawClient.connect(host, port)
    try {
      const { body } = await c.request(ApiKeys.ListOffsets, 7, {
        replicaId: -1,
        isolationLevel,
        topics: [{ name: o.topic, partitions: [...Array(o.partitions).keys()].map((partitionIndex) => ({ partitionIndex, currentLeaderEpoch: -1, timestamp: -1n })) }],
      })
      return (body.topics[0].partitions as { offset: bigint }[]).map((p) => p.offset)
    } finally {
      c.close()
    }
  }
  const stableDeadline = Date.now() + 60_000
  for (;;) {
    const [hw, stable] = [await ends(0), await ends(1)]
    const stuck = hw.map((h, p) => [p, stable[p]!, h] as const).filter(([, l, h]) => l < h)
    if (stuck.length === 0) break
    if (Date.now() > stableDeadline) {
      for (const [p, l, h] of stuck) violations.push(`partition ${p}: LSO ${l} stays below the high watermark ${h} (a hanging transaction)`)
      break
    }
    await sleep(500)
  }
  monitoring = false
  await monitor

  // Read everything back with the reference client: Java's ConsoleConsumer, read_committed.
  const delivered = new Map<string, number>()
  const lastOffset = new Array<bigint>(o.partitions).fill(-1n)
  let read = 0
  // It stops once it has read what the committed (and unknown) transactions wrote, instead of
  // idling 15 s at the end; that nothing lies beyond is checked with our consumer below.
  let written = 0
  for (const [n, out] of outcome) if (out !== 'aborted') written += parts.get(n) ?? 0
  const { stdout } = await javaTool('org.apache.kafka.tools.consumer.ConsoleConsumer', [
    '--bootstrap-server', direct, '--topic', o.topic, '--from-beginning', '--isolation-level', 'read_committed',
    '--max-messages', String(Math.max(1, written)), '--timeout-ms', '15000', '--property', 'print.partition=true', '--property', 'print.offset=true',
  ], { timeoutMs: 600_000 })
  for (const line of stdout.split('\n')) {
    const m = /^Partition:(\d+)\tOffset:(\d+)\t(.*)$/.exec(line)
    if (!m) continue
    const partition = Number(m[1])
    const offset = BigInt(m[2]!)
    if (offset <= lastOffset[partition]!) violations.push(`partition ${partition}: read_committed went back from ${lastOffset[partition]} to ${offset}`)
    lastOffset[partition] = offset
    const key = `${m[3]}@${partition}`
    delivered.set(key, (delivered.get(key) ?? 0) + 1)
    read++
  }

  // Everything up to the end offsets, read_committed, with our consumer: what the Java read
  // stopped short of (an aborted read or a duplicate after the expected records) counts too.
  const ours = new Map<string, number>()
  const tail = await readToEnd([direct], o.topic, o.partitions, { timeoutMs: 120_000 })
  tail.forEach((records, partition) => {
    for (const r of records) ours.set(`${r.value}@${partition}`, (ours.get(`${r.value}@${partition}`) ?? 0) + 1)
  })
  for (const [key, times] of ours) if (times > (delivered.get(key) ?? 0)) delivered.set(key, times)

  const byTxn = new Map<number, Set<number>>()
  for (const [key, times] of delivered) {
    const [value, partition] = key.split('@')
    const n = Number(value!.split(':')[0])
    if (times > 1) violations.push(`duplicate: txn ${n} on partition ${partition} read ${times} times`)
    if (!byTxn.has(n)) byTxn.set(n, new Set())
    byTxn.get(n)!.add(Number(partition))
  }
  for (const [n, out] of outcome) {
    const got = byTxn.get(n)?.size ?? 0
    const want = parts.get(n) ?? 0
    if (out === 'aborted' && got > 0) violations.push(`aborted read: txn ${n} (${actionOf.get(n)}, aborted) read on ${got} of ${want} partitions`)
    if (out === 'committed' && got < want) violations.push(`lost write: txn ${n} (${actionOf.get(n)}, committed) read on ${got} of ${want} partitions`)
    if (out === 'unknown' && got > 0 && got < want) violations.push(`torn transaction: txn ${n} read on ${got} of ${want} partitions`)
  }
  for (const n of byTxn.keys()) if (!outcome.has(n)) violations.push(`txn ${n} read but never written`)

  const outcomes: Record<Outcome, number> = { committed: 0, aborted: 0, unknown: 0 }
  for (const v of outcome.values()) outcomes[v]++
  const faults = o.faults === undefined ? {} : Object.fromEntries(Object.entries(o.faults.proxy.stats).filter(([k, v]) => k !== 'connections' && v > 0))
  return { transactions: outcome.size, outcomes, actions, byClient, brokerKills: kills, faults, recordsRead: read, lsoSamples: samples, violations, durationMs: Date.now() - started }
}
