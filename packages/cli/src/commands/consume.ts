import type { Admin } from '@tidelog/client'
import { Consumer, type Message, type TopicPartition } from '@tidelog/consumer'
import { exclusive, intValue, parseBigInt, parseInteger } from '../args.js'
import type { Command, Context } from '../context.js'
import { UsageError } from '../errors.js'
import { compileFormat, jsonLine } from '../output/format.js'
import { partitionCount } from './producing.js'

/** Milliseconds since the epoch from digits or an ISO-8601 date. */
export function parseTime(v: string, what: string): number {
  if (/^\d+$/.test(v)) return Number(v)
  const t = Date.parse(v)
  if (Number.isNaN(t)) throw new UsageError(`${what} must be milliseconds since the epoch or an ISO-8601 date, got ${JSON.stringify(v)}`)
  return t
}

type Start = { kind: 'beginning' } | { kind: 'end' } | { kind: 'offset'; offset: bigint } | { kind: 'fromEnd'; n: bigint } | { kind: 'time'; ms: number }

// kcat's -o: beginning | end | N (absolute) | -N (N records before the end of each partition).
function parseStart(ctx: Context): Start | undefined {
  const which = exclusive(ctx.args, ['from-beginning', 'offset', 'timestamp'])
  if (which === 'from-beginning') return { kind: 'beginning' }
  if (which === 'timestamp') return { kind: 'time', ms: parseTime(ctx.args.values.get('timestamp')!, '--timestamp') }
  if (which === 'offset') {
    const v = ctx.args.values.get('offset')!
    if (v === 'beginning' || v === 'earliest') return { kind: 'beginning' }
    if (v === 'end' || v === 'latest') return { kind: 'end' }
    const n = parseBigInt(v, '--offset (beginning, end, N or -N)')
    return n < 0n ? { kind: 'fromEnd', n: -n } : { kind: 'offset', offset: n }
  }
  return undefined
}

/**
 * Start offsets looked up with the Admin client, before the consumer fetches: on the consumer's
 * own connection a lookup would queue behind a long-polling Fetch (Kafka answers in order).
 */
async function startOffsets(admin: Admin, tps: TopicPartition[], start: Start): Promise<bigint[]> {
  const at = (timestamp: 'earliest' | 'latest' | number) => admin.listOffsets(tps.map((tp) => ({ ...tp, timestamp }))).then((r) => r.map((o) => o.offset))
  switch (start.kind) {
    case 'beginning':
      return at('earliest')
    case 'end':
      return at('latest')
    case 'offset':
      return tps.map(() => start.offset)
    case 'time': {
      const [found, end] = await Promise.all([at(start.ms), at('latest')])
      // No record at or after the time: the end, as Java's offsetsForTimes-then-seek does.
      return found.map((o, i) => (o < 0n ? end[i]! : o))
    }
    case 'fromEnd': {
      const [begin, end] = await Promise.all([at('earliest'), at('latest')])
      return end.map((e, i) => (e - start.n > begin[i]! ? e - start.n : begin[i]!))
    }
  }
}

/**
 * --until-end: a partition is done once a record at or past its end (as of the start) was printed,
 * or its start already was there. A partition whose last offsets hold no deliverable record
 * (transaction markers, aborted data) never prints one: it counts as done once the consumer's
 * position has passed the end for two checks in a row with nothing printed between.
 */
class EndTracker {
  private readonly next = new Map<number, bigint>()
  private quiet = 0

  constructor(
    private readonly consumer: Consumer,
    private readonly ends: readonly { topic: string; partition: number; offset: bigint }[],
  ) {}

  printed(partition: number, nextOffset: bigint): void {
    this.next.set(partition, nextOffset)
    this.quiet = 0
  }

  done(byPosition = false): boolean {
    return this.ends.every((e) => {
      if (e.offset === 0n || (this.next.get(e.partition) ?? -1n) >= e.offset) return true
      if (!byPosition || !this.consumer.assigned().some((a) => a.partition === e.partition)) return false
      const pos = this.consumer.position(e)
      return pos !== undefined && pos >= e.offset
    })
  }

  /** Called every 100 ms; true when the command should stop. */
  tick(): boolean {
    if (this.done()) return true
    this.quiet = this.done(true) ? this.quiet + 1 : 0
    return this.quiet >= 2
  }
}

const consume: Command = {
  name: 'consume',
  summary: 'print records of a topic (from the end by default), as text, a --format or JSON',
  usage: 'TOPIC',
  options: [
    { name: 'from-beginning', kind: 'flag', help: 'start at the earliest offset (with --group: when the group has none)' },
    { name: 'offset', short: 'o', kind: 'value', arg: 'OFFSET', help: 'beginning, end, N, or -N (N before the end of each partition)' },
    { name: 'timestamp', kind: 'value', arg: 'TIME', help: 'start at the first record at or after TIME (ms or ISO-8601)' },
    { name: 'partition', short: 'p', kind: 'list', arg: 'N', help: 'only this partition (repeatable)' },
    { name: 'group', short: 'g', kind: 'value', arg: 'GROUP', help: 'consume as a member of this group, committing offsets' },
    { name: 'count', short: 'c', kind: 'value', arg: 'N', help: 'exit after N records (Kafka: --max-messages)' },
    { name: 'until-end', short: 'e', kind: 'flag', help: 'exit once every partition is read to its end (as of the start)' },
    { name: 'format', short: 'f', kind: 'value', arg: 'FMT', help: "kcat-style: %t %p %o %k %s %K %S %T %h, \\n \\t (default '%s\\n')" },
    { name: 'json', short: 'J', kind: 'flag', help: 'one JSON object per record (kcat -J)' },
    { name: 'isolation-level', kind: 'value', arg: 'LEVEL', help: 'read_uncommitted (default) or read_committed' },
  ],
  async run(ctx) {
    const [topic, ...extra] = ctx.args.positionals
    if (topic === undefined) throw new UsageError('consume needs a topic')
    if (extra.length > 0) throw new UsageError(`consume takes one topic, got also ${extra.join(' ')}`)
    exclusive(ctx.args, ['format', 'json'])
    const render = ctx.args.flags.has('json') ? jsonLine : compileFormat(ctx.args.values.get('format') ?? '%s\\n')
    const group = ctx.args.values.get('group')
    const start = parseStart(ctx)
    if (group !== undefined && start !== undefined && start.kind !== 'beginning') {
      throw new UsageError('with --group the start is the group\'s committed offset; use "groups reset-offsets" to move it')
    }
    const count = intValue(ctx.args, 'count', { min: 1 })
    const isolation = ctx.args.values.get('isolation-level') ?? 'read_uncommitted'
    if (isolation !== 'read_uncommitted' && isolation !== 'read_committed') throw new UsageError(`--isolation-level must be read_uncommitted or read_committed`)

    const partitions = await partitionCount(ctx, topic)
    const chosen = (ctx.args.lists.get('partition') ?? []).map((p) => parseInteger(p, '--partition', { min: 0 }))
    for (const p of chosen) if (p >= partitions) throw new UsageError(`--partition ${p}: topic ${topic} has partitions 0-${partitions - 1}`)
    if (group !== undefined && chosen.length > 0) throw new UsageError('--partition cannot be combined with --group (the group assigns partitions)')
    const tps = (chosen.length > 0 ? chosen : [...Array(partitions).keys()]).map((partition) => ({ topic, partition }))

    const untilEnd = ctx.args.flags.has('until-end')
    const consumer = new Consumer({
      ...ctx.connection.client,
      groupId: group,
      autoOffsetReset: start?.kind === 'beginning' ? 'earliest' : 'latest',
      isolationLevel: isolation,
      defaultApiTimeoutMs: ctx.connection.timeoutMs,
      // A shorter long-poll when the end is near, so the last Fetch does not hold up the exit.
      fetchMaxWaitMs: untilEnd ? 100 : undefined,
    })
    ctx.onClose(() => consumer.close({ timeoutMs: 5_000 }))
    const admin = ctx.admin()
    const ends = untilEnd ? await admin.listOffsets(tps.map((tp) => ({ ...tp, timestamp: 'latest' as const }))) : undefined
    const tracker = ends === undefined ? undefined : new EndTracker(consumer, ends)
    if (group !== undefined) await consumer.subscribe([topic])
    else {
      const offsets = await startOffsets(admin, tps, start ?? { kind: 'end' })
      consumer.assign(tps)
      tps.forEach((tp, i) => {
        consumer.seek({ ...tp, offset: offsets[i]! })
        tracker?.printed(tp.partition, offsets[i]!)
      })
    }

    const progress = ctx.progress('consumed')
    // The next offset after each partition's last printed record: what a group commits.
    const printed = new Map<number, bigint>()
    let seen = 0
    let stop!: () => void
    const stopped = new Promise<undefined>((resolve) => (stop = () => resolve(undefined)))
    ctx.io.signal.addEventListener('abort', () => stop(), { once: true })
    const timer = tracker === undefined ? undefined : setInterval(() => tracker.tick() && stop(), 100)
    const it = consumer[Symbol.asyncIterator]()
    try {
      while (!(count !== undefined && seen >= count) && tracker?.done() !== true && !ctx.io.signal.aborted) {
        const next = await Promise.race([it.next(), stopped])
        if (next === undefined || next.done === true) break
        const m: Message = next.value
        seen++
        printed.set(m.partition, m.offset + 1n)
        tracker?.printed(m.partition, m.offset + 1n)
        progress.add(1, (m.value?.length ?? 0) + (m.key?.length ?? 0))
        await ctx.write(render(m))
      }
      // Exactly what was printed: a record the consumer had in hand but the loop left unprinted
      // (Ctrl-C, the end reached) is not committed, so the group's next reader gets it.
      if (group !== undefined && printed.size > 0) await consumer.commit([...printed].map(([partition, offset]) => ({ topic, partition, offset })))
    } finally {
      if (timer !== undefined) clearInterval(timer)
      progress.stop()
      void it.return?.()
    }
    ctx.debug(`consumed ${seen} records`)
  },
}

export const consumeCommands: Command[] = [consume]
