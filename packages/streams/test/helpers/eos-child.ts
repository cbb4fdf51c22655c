/**
 * The verifier's application as its own process, so a test can kill -9 it mid-transaction.
 * Configured by environment: BROKERS, APP_ID, PREFIX, STATE_DIR, THREADS, INSTANCE (static
 * membership id, optional), GUARANTEE (default exactly_once_v2), STANDBYS (num.standby.replicas,
 * default 0). Prints `state <NEW>` lines, each followed by, and every 250 ms, `restored <n> <m>`
 * (changelog records restored, and applied to standbys, so far); SIGTERM closes cleanly.
 * With WAIT=1 it loads, prints `ready`, and starts on a `start` line on stdin: a test can have
 * the replacement of an instance it is about to kill warm, so a restart is not a cold start.
 */
import { createInterface } from 'node:readline'
import { KafkaStreams } from '@tidelog/streams'
import { verifierConfig, verifierTopology } from './eos-app.js'

const env = (k: string) => {
  const v = process.env[k]
  if (v === undefined) throw new Error(`${k} is not set`)
  return v
}

if (process.env['WAIT'] === '1') {
  const lines = createInterface({ input: process.stdin })
  process.stdout.write('ready\n')
  await new Promise<void>((resolve) => lines.on('line', (l) => l === 'start' && resolve()))
}

const app = new KafkaStreams(verifierTopology(env('PREFIX')).build(), verifierConfig(env('BROKERS').split(','), env('APP_ID'), {
  'state.dir': env('STATE_DIR'),
  'num.stream.threads': Number(process.env['THREADS'] ?? '1'),
  'processing.guarantee': process.env['GUARANTEE'] === 'at_least_once' ? 'at_least_once' : 'exactly_once_v2',
  'num.standby.replicas': Number(process.env['STANDBYS'] ?? '0'),
  ...(process.env['INSTANCE'] ? { 'group.instance.id': process.env['INSTANCE'] } : {}),
}))
const counters = () => process.stdout.write(`restored ${app.restoredRecords} ${app.standbyRecords}\n`)
app.setStateListener((s) => {
  process.stdout.write(`state ${s}\n`)
  counters()
})
// Standby records grow without a state change.
setInterval(counters, 250).unref()
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)))
await app.start()
