import type { LogLevel } from './config.js'

const RANK: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 }

export interface Logger {
  readonly level: LogLevel
  error(message: string): void
  warn(message: string): void
  info(message: string): void
  debug(message: string): void
  enabled(level: LogLevel): boolean
}

/**
 * Line-oriented logs on stderr, so stdout carries only the one "ready" line a
 * script can wait for.
 */
export function createLogger(level: LogLevel, write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const max = RANK[level]
  const emit = (l: LogLevel, message: string): void => {
    if (RANK[l] <= max) write(`${new Date().toISOString()} ${l.toUpperCase().padEnd(5)} ${message}\n`)
  }
  return {
    level,
    error: (m) => emit('error', m),
    warn: (m) => emit('warn', m),
    info: (m) => emit('info', m),
    debug: (m) => emit('debug', m),
    enabled: (l) => RANK[l] <= max,
  }
}

/** For embedding and tests: nothing is printed. */
export const silentLogger: Logger = {
  level: 'error',
  error: () => {},
  warn: () => {},
  info: () => {},
  debug: () => {},
  enabled: () => false,
}
