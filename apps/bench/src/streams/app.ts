// The streams scenarios on @tidelog/streams, in a process of their own (as the Java program
// apps/bench/java/StreamsBench.java, which has the same topologies and settings). Prints
// STARTING just before start() and runs until SIGTERM, which closes it.
import { Consumed, Grouped, KafkaStreams, Produced, Serdes, StreamsBuilder, TimeWindows, WindowedSerdes } from '@tidelog/streams'
import type { StreamsArgs } from './shape.js'

const a = JSON.parse(process.argv[2]!) as StreamsArgs
const S = Serdes.String()
const b = new StreamsBuilder()
const input = b.stream<string, string>(a.input, Consumed.with(S, S))
switch (a.scenario) {
  case 'S1':
    input.filter((_k, v) => !v.endsWith('0')).mapValues((v) => v.toUpperCase()).to(a.output, Produced.with(S, S))
    break
  case 'S2':
    input.groupBy((_k, v) => v, Grouped.with(S, S)).count().toStream().to(a.output, Produced.with(S, Serdes.Long()))
    break
  case 'S3':
    input.groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(60_000)).count().toStream()
      .to(a.output, Produced.with(WindowedSerdes.timeWindowedSerdeFrom(S, 60_000), Serdes.Long()))
    break
  case 'S4': {
    const table = b.table<string, string>(a.table!, Consumed.with(S, S))
    input.leftJoin(table, (v: string, t: string | null) => `${v}|${t}`).to(a.output, Produced.with(S, S))
    break
  }
}
const app = new KafkaStreams(b.build(), {
  'application.id': a.appId,
  'bootstrap.servers': [a.bootstrap],
  'default.key.serde': S,
  'default.value.serde': S,
  'processing.guarantee': 'at_least_once',
  'commit.interval.ms': a.commitIntervalMs,
  'num.stream.threads': 1,
  'replication.factor': 1,
  'state.dir': a.stateDir,
})
app.setUncaughtExceptionHandler((e) => {
  console.log(`ERROR ${e instanceof Error ? e.message : String(e)}`)
  return 'SHUTDOWN_CLIENT'
})
process.once('SIGTERM', () => {
  app.close().then(
    () => process.exit(0),
    () => process.exit(1),
  )
})
console.log('STARTING')
app.start().catch((e: unknown) => {
  console.log(`ERROR ${e instanceof Error ? e.message : String(e)}`)
  process.exit(1)
})
