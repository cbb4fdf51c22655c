// Child process for the log manager tests: holds a data dir, or appends and
// dies without a clean shutdown.
import { LogDirLockedError, LogManager } from '../../src/log/index.js'
import { makeBatch } from './batches.js'

const [mode, dataDir, n] = process.argv.slice(2)
try {
  const mgr = LogManager.open({ dataDir: dataDir!, config: { segmentBytes: 500 } })
  if (mode === 'hold') {
    process.stdout.write('locked\n')
    setInterval(() => {}, 1000)
  } else if (mode === 'crash') {
    const log = mgr.getOrCreate('crash', 0)
    for (let i = 0; i < Number(n); i++) log.append(makeBatch(2))
    // Exit without close(): no flush, no checkpoint, no marker, lock left behind.
    process.exit(0)
  } else {
    await mgr.close()
  }
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`)
  process.exit(err instanceof LogDirLockedError ? 3 : 1)
}
