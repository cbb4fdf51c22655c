import type { HeaderInput } from '@tidelog/protocol'
import { exclusive, intValue, keyValues } from '../args.js'
import type { Command } from '../context.js'
import { UsageError } from '../errors.js'
import { InputError, readRecords, sources, type InputMode } from '../input.js'
import { PRODUCER_OPTIONS, partitionCount, producerOptions, RateLimiter, SendWindow } from './producing.js'

const produce: Command = {
  name: 'produce',
  summary: 'write records from stdin or files, one per line (or JSON lines, or raw)',
  usage: 'TOPIC [FILE...]',
  options: [
    { name: 'key-separator', short: 'K', kind: 'value', arg: 'SEP', help: 'each line is KEY SEP VALUE' },
    { name: 'json', kind: 'flag', help: 'each line is {"key","value","headers","partition","timestamp"}' },
    { name: 'raw', kind: 'flag', help: 'each file (or stdin) is one record value, bytes as they are' },
    { name: 'header', short: 'H', kind: 'list', arg: 'NAME=VALUE', help: 'a header on every record (repeatable)' },
    { name: 'partition', short: 'p', kind: 'value', arg: 'N', help: 'write to this partition (default: by key, or sticky)' },
    { name: 'rate', kind: 'value', arg: 'N', help: 'at most N records per second' },
    ...PRODUCER_OPTIONS,
  ],
  async run(ctx) {
    const [topic, ...files] = ctx.args.positionals
    if (topic === undefined) throw new UsageError('produce needs a topic')
    const modeName = exclusive(ctx.args, ['key-separator', 'json', 'raw'])
    const mode: InputMode =
      modeName === 'json' ? { kind: 'json' } : modeName === 'raw' ? { kind: 'raw' } : { kind: 'line', keySeparator: ctx.args.values.get('key-separator') }
    if (mode.kind === 'line' && mode.keySeparator === '') throw new UsageError('--key-separator must not be empty')
    const headers = keyValues(ctx.args.lists.get('header') ?? [], '--header')
    const partition = intValue(ctx.args, 'partition', { min: 0 })
    const rate = intValue(ctx.args, 'rate', { min: 1 })
    const input = sources(files, ctx.io.stdin)
    const options = producerOptions(ctx, ctx.args)
    const count = await partitionCount(ctx, topic)
    if (partition !== undefined && partition >= count) throw new UsageError(`--partition ${partition}: topic ${topic} has partitions 0-${count - 1}`)

    const progress = ctx.progress('produced')
    const window = new SendWindow(SendWindow.open(ctx, options), 20_000, (_m, r) => progress.add(1, size(r.key) + size(r.value)))
    const limiter = new RateLimiter(rate)
    let failure: unknown
    try {
      for await (const rec of readRecords(input, mode)) {
        if (ctx.io.signal.aborted) break
        await limiter.take()
        const merged: HeaderInput | undefined = Object.keys(headers).length === 0 ? rec.headers : { ...headers, ...(rec.headers as Record<string, string | null> | undefined) }
        await window.send({ ...rec, topic, headers: merged, partition: partition ?? rec.partition })
      }
    } catch (e) {
      failure = e
    }
    // Whatever was read before a bad line is still delivered, then the bad line is reported.
    try {
      await window.finish()
    } finally {
      progress.stop()
    }
    ctx.debug(`produced ${window.acked} records to ${topic}`)
    if (failure instanceof InputError) throw new InputError(`${failure.message}; the ${window.acked} records before it were written`)
    if (failure !== undefined) throw failure
  },
}

function size(b: unknown): number {
  if (b === null || b === undefined) return 0
  return typeof b === 'string' ? Buffer.byteLength(b) : (b as Uint8Array).length
}

export const produceCommands: Command[] = [produce]
