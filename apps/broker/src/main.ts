import { ConfigError, helpText, parseConfig, type ParseResult } from './config.js'
import { createLogger } from './logger.js'

// Exit codes: 2 for a usage error (as getopt-style tools do), 1 when the broker
// cannot start (data dir locked, port taken), 0 after a clean shutdown.
async function main(): Promise<void> {
  if (process.argv[2] === 'certs') {
    // A subcommand rather than a flag: it writes files and exits, and never starts a broker.
    const { runCertsCommand } = await import('./security/certs/command.js')
    process.exitCode = runCertsCommand(process.argv.slice(3))
    return
  }
  let parsed: ParseResult
  try {
    parsed = parseConfig()
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`tidelog-broker: ${err.message}\n`)
      process.exit(2)
    }
    throw err
  }
  if (parsed.help) {
    process.stdout.write(helpText())
    process.stdout.write('\nCommands:\n  tidelog-broker certs --dir DIR [--san NAME]...   write development TLS certificates (certs --help)\n')
    return
  }
  const config = parsed.config
  const logger = createLogger(config.logLevel)
  // Loaded only once the arguments are known good, so --help and usage errors
  // answer without loading the codec.
  const { startBroker } = await import('./broker.js')
  let broker: Awaited<ReturnType<typeof startBroker>>
  try {
    broker = await startBroker({ ...config, logger })
  } catch (err) {
    process.stderr.write(`tidelog-broker: cannot start: ${(err as Error).message}\n`)
    process.exit(1)
  }
  // One ready line on stdout (scripts wait for it); further listeners are named on it too.
  const more = broker.listeners.length > 1 ? `, listeners ${broker.listeners.map((l) => `${l.name}://${l.host}:${l.port}`).join(',')}` : ''
  const web = broker.console !== undefined ? `, console ${broker.console.url}` : ''
  process.stdout.write(
    `tidelog-broker listening on ${broker.host}:${broker.port} (node ${config.nodeId}, data ${broker.dataDir}${more}${web})\n`,
  )

  let closing = false
  const shutdown = (signal: string): void => {
    if (closing) {
      // A second signal means "now": the checkpoints may be stale, recovery covers it.
      logger.warn(`${signal} again, exiting without a clean shutdown`)
      process.exit(1)
    }
    closing = true
    logger.info(`${signal}: shutting down`)
    broker.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error(`shutdown failed: ${(err as Error).stack ?? String(err)}`)
        process.exit(1)
      },
    )
  }
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  process.on('SIGINT', () => shutdown('SIGINT'))
}

main().catch((err: unknown) => {
  process.stderr.write(`tidelog-broker: ${(err as Error).stack ?? String(err)}\n`)
  process.exit(1)
})
