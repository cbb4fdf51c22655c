/**
 * The subset of pino's interface the client calls: a structured object first, then a message.
 * pino, bunyan-style adapters and `console`-backed shims all fit.
 */
export interface Logger {
  debug(obj: object, msg?: string): void
  info(obj: object, msg?: string): void
  warn(obj: object, msg?: string): void
  error(obj: object, msg?: string): void
}

const noop = (): void => {}

/** The default: nothing is printed unless a logger is injected. */
export const silentLogger: Logger = Object.freeze({ debug: noop, info: noop, warn: noop, error: noop })
