/**
 * The transaction checker at full size, for the numbers in the report (CI runs the ~2,000
 * transaction size in test/interop/transactions-jepsen.test.ts):
 *
 *   node --import tsx test/jepsen/run.ts [--target kafka|tidelog] [--transactions 10000]
 *        [--partitions 6] [--writers 4] [--kills 4] [--restart kill|clean] [--seed N]
 *        [--clients kafkajs,tidelog] [--faults 0.004] [--stall-ms 50,1000]
 *
 * --clients: each writer's client, cycled (tidelog: our @tidelog/producer). --faults: the chance
 * per forwarded chunk that test/helpers/fault-proxy.ts cuts, stalls or half-closes the
 * connection of our producer's writers (tidelog only: the broker advertises the proxy; 0 runs
 * without it). kafkajs's connections pass untouched, unless --faults-kafkajs: kafkajs 2.2.4
 * crashes the process on a response cut mid-frame (its own bug). --stall-ms: how long a stall
 * holds a direction; above the writers' request timeout (5 s) a retried request's first attempt
 * reaches the broker late.
 *
 * Prints the run's counts and every violation; exits 1 when there is one.
 */
import { parseArgs } from 'node:util'
import { type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.js'
import { createTopic, startTarget } from '../interop/transactions-targets.js'
import { runChecker } from './txn-checker.js'
import { TIDELOG_WRITER_CLIENT_ID, type WriterClient } from './writers.js'

const { values } = parseArgs({
  options: {
    target: { type: 'string', default: 'tidelog' },
    transactions: { type: 'string', default: '10000' },
    partitions: { type: 'string', default: '6' },
    writers: { type: 'string', default: '4' },
    kills: { type: 'string', default: '4' },
    restart: { type: 'string', default: 'kill' },
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
    clients: { type: 'string', default: 'kafkajs' },
    faults: { type: 'string', default: '0' },
    'faults-kafkajs': { type: 'boolean', default: false },
    'stall-ms': { type: 'string', default: '50,1000' },
  },
})
const clients = values.clients.split(',') as WriterClient[]
if (clients.some((c) => c !== 'kafkajs' && c !== 'tidelog')) throw new Error('--clients is a list of kafkajs and tidelog')
const faultRate = Number(values.faults)
const [stallMin, stallMax] = values['stall-ms'].split(',').map(Number) as [number, number]
if (!(stallMin >= 0 && stallMax >= stallMin)) throw new Error('--stall-ms is MIN,MAX in ms')
if (faultRate > 0 && values.target !== 'tidelog') throw new Error('--faults needs --target tidelog (the broker must advertise the proxy)')
if (values.target !== 'kafka' && values.target !== 'tidelog') throw new Error('--target is kafka or tidelog')
if (values.restart !== 'kill' && values.restart !== 'clean') throw new Error('--restart is kill or clean')
const restart = values.restart
const seed = Number(values.seed)
let proxy: FaultProxy | undefined
let broker = { host: '127.0.0.1', port: 0 }
if (faultRate > 0) proxy = await startFaultProxy({ target: () => broker, seed })
const target = await startTarget(values.target === 'kafka' ? 'Apache Kafka' : 'tidelog', proxy === undefined ? {} : { advertisedPort: proxy.port })
broker = { host: '127.0.0.1', port: Number(target.bootstrap.split(':')[1]) }
try {
  const partitions = Number(values.partitions)
  await createTopic(target.bootstrap, 'checker', partitions)
  const result = await runChecker({
    bootstrap: proxy === undefined ? target.bootstrap : `${proxy.host}:${proxy.port}`,
    directBootstrap: target.bootstrap,
    clients,
    faults: proxy === undefined ? undefined : { proxy, rates: { perChunk: faultRate, stallMs: [stallMin, stallMax], clientIds: (id) => values['faults-kafkajs'] || id === TIDELOG_WRITER_CLIENT_ID } },
    topic: 'checker',
    partitions,
    transactions: Number(values.transactions),
    writers: Number(values.writers),
    seed,
    killBroker: () => target.restart(restart),
    brokerKills: Number(values.kills),
    log: (l) => console.error(l),
  })
  console.log(JSON.stringify({ target: values.target, seed, ...result, violations: result.violations.length }, null, 2))
  for (const v of result.violations) console.log(`VIOLATION ${v}`)
  process.exitCode = result.violations.length > 0 ? 1 : 0
} finally {
  await proxy?.close()
  await target.stop()
}
