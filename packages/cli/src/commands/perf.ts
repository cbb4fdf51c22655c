import { randomBytes } from 'node:crypto'
import { Consumer } from '@tidelog/consumer'
import { intValue } from '../args.js'
import type { Command } from '../context.js'
import { UsageError } from '../errors.js'
import { PRODUCER_OPTIONS, partitionCount, producerOptions, RateLimiter, SendWindow } from './producing.js'

const MB = 1024 * 1024

/** The value at quantile q of sorted latencies (Java's perf tool indexes the same way). */
export function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!
}

/** Latencies in power-of-two millisecond buckets, with bars: the shape percentiles hide. */
export function histogram(sorted: Float64Array): string {
  if (sorted.length === 0) return ''
  const buckets: { lo: number; hi: number; n: number }[] = []
  let i = 0
  for (let lo = 0, hi = 1; i < sorted.length; lo = hi, hi *= 2) {
    let n = 0
    while (i < sorted.length && sorted[i]! < hi) {
      n++
      i++
    }
    buckets.push({ lo, hi, n })
  }
  while (buckets[0]!.n === 0) buckets.shift()
  const most = Math.max(...buckets.map((b) => b.n))
  const w = String(buckets.at(-1)!.hi).length
  const nw = String(most).length
  return (
    'latency ms  records\n' +
    buckets.map((b) => `${String(b.lo).padStart(w)} - ${String(b.hi).padStart(w)}  ${String(b.n).padStart(nw)}  ${'#'.repeat(Math.round((b.n / most) * 40))}`.trimEnd()).join('\n') +
    '\n'
  )
}

function topicOf(positionals: string[], flag: string | undefined): string {
  const t = flag ?? positionals[0]
  if (t === undefined) throw new UsageError('perf needs a topic (--topic or an argument)')
  return t
}

const perfProduce: Command = {
  name: 'perf produce',
  summary: 'producer throughput and latency percentiles (as kafka-producer-perf-test.sh)',
  usage: 'TOPIC',
  options: [
    { name: 'topic', kind: 'value', arg: 'TOPIC', help: 'the topic (or give it as an argument)' },
    { name: 'num-records', short: 'n', kind: 'value', arg: 'N', help: 'records to send (default 100000)' },
    { name: 'record-size', short: 's', kind: 'value', arg: 'BYTES', help: 'value size of each record (default 100)' },
    { name: 'throughput', kind: 'value', arg: 'N', help: 'at most N records/s (-1, the default: unthrottled)' },
    { name: 'reporting-interval', kind: 'value', arg: 'MS', help: 'interim report every MS (default 5000)' },
    { name: 'histogram', kind: 'flag', help: 'also print the latencies in power-of-two buckets' },
    ...PRODUCER_OPTIONS,
  ],
  async run(ctx) {
    const topic = topicOf(ctx.args.positionals, ctx.args.values.get('topic'))
    const n = intValue(ctx.args, 'num-records', { min: 1 }) ?? 100_000
    const size = intValue(ctx.args, 'record-size', { min: 0 }) ?? 100
    const throughput = intValue(ctx.args, 'throughput', { min: -1 }) ?? -1
    const interval = intValue(ctx.args, 'reporting-interval', { min: 100 }) ?? 5_000
    const options = producerOptions(ctx, ctx.args)
    await partitionCount(ctx, topic)
    // Random bytes, as Java's tool sends, so compression results are not flattered.
    const payload = randomBytes(size)
    const latencies = new Float64Array(n)
    let windowCount = 0
    let windowLatency = 0
    let windowMax = 0
    let windowStart = performance.now()
    const window = new SendWindow(SendWindow.open(ctx, options), 10_000, (_m, _r, startedAt) => {
      const ms = performance.now() - startedAt
      latencies[window.acked - 1] = ms
      windowCount++
      windowLatency += ms
      windowMax = Math.max(windowMax, ms)
    })
    const report = () => {
      const s = (performance.now() - windowStart) / 1000
      ctx.io.stdout.write(`${windowCount} records sent, ${(windowCount / s).toFixed(1)} records/sec (${((windowCount * size) / MB / s).toFixed(2)} MB/sec), ${(windowLatency / Math.max(1, windowCount)).toFixed(1)} ms avg latency, ${windowMax.toFixed(1)} ms max latency.\n`)
      windowCount = windowLatency = windowMax = 0
      windowStart = performance.now()
    }
    const timer = setInterval(report, interval)
    const limiter = new RateLimiter(throughput > 0 ? throughput : undefined)
    const started = performance.now()
    try {
      for (let i = 0; i < n && !ctx.io.signal.aborted; i++) {
        await limiter.take()
        await window.send({ topic, value: payload })
      }
      await window.finish()
    } finally {
      clearInterval(timer)
    }
    const s = (performance.now() - started) / 1000
    const sorted = latencies.slice(0, window.acked).sort()
    const avg = sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length)
    const p = (q: number) => Math.round(percentile(sorted, q))
    await ctx.write(
      `${window.acked} records sent, ${(window.acked / s).toFixed(1)} records/sec (${((window.acked * size) / MB / s).toFixed(2)} MB/sec), ${avg.toFixed(2)} ms avg latency, ${(sorted[sorted.length - 1] ?? 0).toFixed(2)} ms max latency, ${p(0.5)} ms 50th, ${p(0.95)} ms 95th, ${p(0.99)} ms 99th, ${p(0.999)} ms 99.9th.\n`,
    )
    if (ctx.args.flags.has('histogram')) await ctx.write(histogram(sorted))
  },
}

const perfConsume: Command = {
  name: 'perf consume',
  summary: 'consumer throughput from the earliest offset (as kafka-consumer-perf-test.sh)',
  usage: 'TOPIC',
  options: [
    { name: 'topic', kind: 'value', arg: 'TOPIC', help: 'the topic (or give it as an argument)' },
    { name: 'messages', short: 'n', kind: 'value', arg: 'N', help: 'records to read (default: everything up to the end as of the start)' },
    { name: 'group', short: 'g', kind: 'value', arg: 'GROUP', help: 'read as this group (default: no group, every partition assigned)' },
  ],
  async run(ctx) {
    const topic = topicOf(ctx.args.positionals, ctx.args.values.get('topic'))
    const wanted = intValue(ctx.args, 'messages', { min: 1 })
    const group = ctx.args.values.get('group')
    const partitions = await partitionCount(ctx, topic)
    const tps = [...Array(partitions).keys()].map((partition) => ({ topic, partition }))
    const consumer = new Consumer({ ...ctx.connection.client, groupId: group, autoOffsetReset: 'earliest', defaultApiTimeoutMs: ctx.connection.timeoutMs })
    ctx.onClose(() => consumer.close({ timeoutMs: 5_000 }))
    const startWall = Date.now()
    const started = performance.now()
    let rebalanceMs = 0
    if (group !== undefined) await consumer.subscribe([topic])
    else {
      consumer.assign(tps)
      await consumer.seekToBeginning(tps)
    }
    const ends = await consumer.endOffsets(tps)
    const total = wanted ?? Number(ends.reduce((a, e) => a + e.offset, 0n) - (await consumer.beginningOffsets(tps)).reduce((a, e) => a + e.offset, 0n))
    const progress = ctx.progress('consumed')
    let records = 0
    let bytes = 0
    let firstAt: number | undefined
    try {
      if (total > 0) {
        for await (const batch of consumer.batches()) {
          firstAt ??= performance.now()
          if (group !== undefined && rebalanceMs === 0) rebalanceMs = firstAt - started
          const before = bytes
          let n = 0
          for (const m of batch.messages) {
            if (records >= total) break
            records++
            n++
            bytes += (m.value?.length ?? 0) + (m.key?.length ?? 0)
          }
          progress.add(n, bytes - before)
          if (records >= total || ctx.io.signal.aborted) break
        }
      }
    } finally {
      progress.stop()
    }
    const endWall = Date.now()
    const s = (performance.now() - started) / 1000
    const fetchS = (performance.now() - (firstAt ?? started)) / 1000
    const mb = bytes / MB
    const d = (t: number) => new Date(t).toISOString().replace('T', ' ').replace('Z', '')
    await ctx.write(
      'start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n' +
        `${d(startWall)}, ${d(endWall)}, ${mb.toFixed(4)}, ${(mb / s).toFixed(4)}, ${records}, ${(records / s).toFixed(4)}, ${Math.round(rebalanceMs)}, ${Math.round(fetchS * 1000)}, ${(mb / Math.max(fetchS, 1e-9)).toFixed(4)}, ${(records / Math.max(fetchS, 1e-9)).toFixed(4)}\n`,
    )
  },
}

export const perfCommands: Command[] = [perfProduce, perfConsume]
