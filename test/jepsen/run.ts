/**
 * The transaction checker at full size, for the numbers in the report (CI runs the ~2,000
 * transaction size in test/interop/transactions-jepsen.test.ts):
 *
 *   node --import tsx test/jepsen/run.ts [--target kafka|tidelog] [--transactions 10000]
 *        [--partitions 6] [--writers 4] [--kills 4] [--restart kill|clean] [--seed N]
 *
 * Prints the run's counts and every violation; exits 1 when there is one.
 */
import { parseArgs } from 'node:util'
import { createTopic, startTarget } from '../interop/transactions-targets.js'
import { runChecker } from './txn-checker.js'

const { values } = parseArgs({
  options: {
    target: { type: 'string', default: 'tidelog' },
    transactions: { type: 'string', default: '10000' },
    partitions: { type: 'string', default: '6' },
    writers: { type: 'string', default: '4' },
    kills: { type: 'string', default: '4' },
    restart: { type: 'string', default: 'kill' },
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
  },
})
if (values.target !== 'kafka' && values.target !== 'tidelog') throw new Error('--target is kafka or tidelog')
if (values.restart !== 'kill' && values.restart !== 'clean') throw new Error('--restart is kill or clean')
const restart = values.restart
const target = await startTarget(values.target === 'kafka' ? 'Apache Kafka' : 'tidelog')
try {
  const partitions = Number(values.partitions)
  await createTopic(target.bootstrap, 'checker', partitions)
  const result = await runChecker({
    bootstrap: target.bootstrap,
    topic: 'checker',
    partitions,
    transactions: Number(values.transactions),
    writers: Number(values.writers),
    seed: Number(values.seed),
    killBroker: () => target.restart(restart),
    brokerKills: Number(values.kills),
    log: (l) => console.error(l),
  })
  console.log(JSON.stringify({ target: values.target, seed: Number(values.seed), ...result, violations: result.violations.length }, null, 2))
  for (const v of result.violations) console.log(`VIOLATION ${v}`)
  process.exitCode = result.violations.length > 0 ? 1 : 0
} finally {
  await target.stop()
}
