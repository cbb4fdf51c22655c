/**
 * The per-record path of a stream task without a broker: fetched messages (as the consumer hands
 * them over) go through the stream thread's batch intake, the task's processors and sinks, into
 * a collector that keeps nothing. The topologies are apps/bench's ST1-ST3 (ST2's repartition
 * records are fed to its second sub-topology's task). Run: `npx tsx packages/streams/bench/task-path.ts [records]`;
 * add `node --cpu-prof --import tsx` to profile. One machine, one run: compare runs, not machines.
 */
import type { Message } from '@tidelog/consumer'
import { Grouped, Produced, Serdes, StreamsBuilder, TaskId, TimeWindows, Consumed, type Topology } from '../src/index.js'
import { WindowedSerdes } from '../src/windows/windowed-serdes.js'
import { StreamTask, type RecordCollector } from '../src/internal/task.js'
import { addBatch } from '../src/runtime/thread-io.js'

const N = Number(process.argv[2] ?? 300_000)
const KEYS = 10_000
const S = Serdes.String()
const pad = (n: number) => String(n).padStart(4, '0')

function topologyOf(id: string): Topology {
  const b = new StreamsBuilder()
  const input = b.stream<string, string>('in', Consumed.with(S, S))
  if (id === 'ST1') input.filter((_k, v) => !v.endsWith('0')).mapValues((v) => v.toUpperCase()).to('out', Produced.with(S, S))
  else if (id === 'ST2') input.groupBy((_k, v) => v, Grouped.with(S, S)).count().toStream().to('out', Produced.with(S, Serdes.Long()))
  else input.groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(60_000)).count().toStream().to('out', Produced.with(WindowedSerdes.timeWindowedSerdeFrom(S, 60_000), Serdes.Long()))
  return b.build()
}

/** The input of apps/bench's streams scenarios: xorshift keys and words, timestamps 1 ms apart. */
function inputs(topic: string): Message[] {
  let x = 2463534242
  const next = () => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return (x >>> 0) % KEYS
  }
  const out: Message[] = []
  for (let i = 0; i < N; i++) {
    const word = next()
    out.push({ topic, partition: 0, offset: BigInt(i), key: Buffer.from(`k${pad(next())}`), value: Buffer.from(`w${pad(word)}`), headers: [], timestamp: BigInt(1_700_000_000_000 + i), timestampType: 0, leaderEpoch: 0 } as unknown as Message)
  }
  return out
}

function run(id: string): { rate: number; outputs: number } {
  const topology = topologyOf(id)
  const internal = topology.internal
  const groups = [...internal.nodeGroups().values()]
  let outputs = 0
  const repartitioned: Message[] = []
  const tasks: StreamTask[] = []
  const collector: RecordCollector = {
    send: (r) => {
      if (r.topic === 'out') outputs++
      else if (r.topic.endsWith('-repartition')) repartitioned.push({ topic: r.topic, partition: 0, offset: BigInt(repartitioned.length), key: r.key, value: r.value, headers: [...r.headers], timestamp: BigInt(r.timestamp), timestampType: 0, leaderEpoch: 0 } as unknown as Message)
    },
  }
  for (const [i, names] of groups.entries()) {
    tasks.push(new StreamTask(new TaskId(i, 0), internal, names, { applicationId: 'bench', wallClock: Date.now, defaultKeySerde: S as never, defaultValueSerde: S as never }, collector))
  }
  const source = inputs('in')
  const BATCH = 2000
  const t = process.hrtime.bigint()
  for (let i = 0; i < source.length; i += BATCH) {
    const first = tasks[0]!
    addBatch(first, 'in', 0, source.slice(i, i + BATCH))
    while (first.process()) first.maybePunctuateStreamTime()
    if (tasks[1] !== undefined && repartitioned.length > 0) {
      addBatch(tasks[1], repartitioned[0]!.topic, 0, repartitioned.splice(0))
      while (tasks[1].process()) tasks[1].maybePunctuateStreamTime()
    }
  }
  return { rate: Math.round(N / (Number(process.hrtime.bigint() - t) / 1e9)), outputs }
}

for (const id of (process.argv[3] ?? 'ST1,ST2,ST3').split(',')) {
  run(id) // warm-up: the JIT, and the same work twice keeps the comparison fair
  const r = run(id)
  console.log(`${id}: ${r.rate.toLocaleString('en')} records/s through the task (${r.outputs.toLocaleString('en')} outputs)`)
}
