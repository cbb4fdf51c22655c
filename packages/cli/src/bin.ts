import { run } from './cli.js'

const controller = new AbortController()
let interrupts = 0
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    // The first signal lets the command finish what is in hand (commit, flush); a second one leaves now.
    if (++interrupts > 1) process.exit(130)
    controller.abort()
  })
}
// `tidelog consume t | head` closes the pipe early: that is a normal end, not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0)
  throw err
})

const code = await run(process.argv.slice(2), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: controller.signal,
})
// run() has closed every client; exit once stdout has drained rather than wait for sockets to linger.
process.stdout.write('', () => process.exit(code))
