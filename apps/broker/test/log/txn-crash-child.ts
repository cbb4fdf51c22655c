// Child process for the transaction crash test: writes transactions and dies by SIGKILL.
import { LogManager } from '../../src/log/index.js'
import { makeBatch } from '../helpers/batches.js'

const [dataDir] = process.argv.slice(2)
const mgr = LogManager.open({ dataDir: dataDir!, config: { segmentBytes: 400 } })
const log = mgr.getOrCreate('t', 0)
const txn = (pid: number, seq: number) => makeBatch(2, { producerId: BigInt(pid), producerEpoch: 0, baseSequence: seq, isTransactional: true })
const marker = (pid: number, commit: boolean) => ({ producerId: pid, producerEpoch: 0, commit, coordinatorEpoch: 0, transactionVersion: 1 })
for (let i = 0; i < 5; i++) log.append(txn(1, i * 2)) // 0-9, aborted
log.appendTxnMarker(marker(1, false)) // 10
for (let i = 0; i < 3; i++) log.append(txn(2, i * 2)) // 11-16, committed
log.appendTxnMarker(marker(2, true)) // 17
log.append(txn(3, 0)) // 18-19, left open
for (let i = 0; i < 4; i++) log.append(makeBatch(1)) // 20-23, plain
// Flush what is there so far, as a broker would have done for acks, then die hard.
await log.flush()
process.stdout.write(`${JSON.stringify({ segments: log.segments.length, leo: log.logEndOffset, lso: log.lastStableOffset })}\n`)
process.kill(process.pid, 'SIGKILL')
