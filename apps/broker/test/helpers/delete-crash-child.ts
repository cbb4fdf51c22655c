// Child process for the topic-deletion crash tests: creates topics, produces to
// them, then deletes one and is SIGKILLed at the chosen point of the deletion.
import { ApiKeys, ZERO_UUID } from '@tidelog/protocol'
import { startBroker } from '../../src/index.js'
import { makeBatch } from './batches.js'
import { faultyFs } from './faulty-fs.js'
import { RawClient } from './raw-client.js'

const [dataDir, crashAt] = process.argv.slice(2) as [string, 'mid-rename' | 'after-commit']
const die = (): never => {
  process.kill(process.pid, 'SIGKILL')
  throw new Error('unreachable')
}
const fs = faultyFs()
const broker = await startBroker({ port: 0, dataDir, fs, flushMessages: 1 })
const c = await RawClient.connect(broker.port)
await c.request(ApiKeys.CreateTopics, 7, {
  topics: [
    { name: 'doomed', numPartitions: 4, replicationFactor: 1, assignments: [], configs: [] },
    { name: 'kept', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] },
  ],
  timeoutMs: 5000,
  validateOnly: false,
})
for (const [name, partitions] of [['doomed', 4], ['kept', 1]] as const) {
  for (let p = 0; p < partitions; p++) {
    const r = await c.request(ApiKeys.Produce, 9, {
      transactionalId: null,
      acks: -1,
      timeoutMs: 1000,
      topicData: [{ name, partitionData: [{ index: p, records: makeBatch([{ value: `${name}-${p}` }]) }] }],
    })
    if (r.responses[0].partitionResponses[0].errorCode !== 0) throw new Error(`produce to ${name}-${p} failed`)
  }
}
let renamed = 0
fs.plan.beforeRename = (_from, to) => {
  // Two of the four partition directories are renamed aside; the crash comes before the third.
  if (crashAt === 'mid-rename' && to.endsWith('-delete') && ++renamed === 3) die()
}
// topics.json without the topic is durable before any removal starts.
fs.plan.beforeRm = () => {
  if (crashAt === 'after-commit') die()
}
await c.request(ApiKeys.DeleteTopics, 6, { topics: [{ name: 'doomed', topicId: ZERO_UUID }], timeoutMs: 5000 })
// The removal runs in the background after the response: give it time to reach the crash.
await new Promise((r) => setTimeout(r, 3000))
process.stderr.write('the deletion finished without the planned crash\n')
process.exit(1)
