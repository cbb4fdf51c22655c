import type { Logger as NativeLogger } from '@tidelog/client'

/** kafkajs' levels; INFO is 4 in kafkajs (there is no 3). */
export enum logLevel {
  NOTHING = 0,
  ERROR = 1,
  WARN = 2,
  INFO = 4,
  DEBUG = 5,
}

export interface LoggerEntryContent {
  readonly timestamp: string
  readonly message: string
  [key: string]: unknown
}

export interface LogEntry {
  namespace: string
  level: logLevel
  label: string
  log: LoggerEntryContent
}

export type logCreator = (level: logLevel) => (entry: LogEntry) => void

export interface Logger {
  info(message: string, extra?: object): void
  error(message: string, extra?: object): void
  warn(message: string, extra?: object): void
  debug(message: string, extra?: object): void
  namespace(namespace: string, level?: logLevel): Logger
  setLogLevel(level: logLevel): void
}

const LABELS: Record<number, string> = { [logLevel.ERROR]: 'ERROR', [logLevel.WARN]: 'WARN', [logLevel.INFO]: 'INFO', [logLevel.DEBUG]: 'DEBUG' }

/** kafkajs' default: one JSON line per entry, errors to console.error, warnings to console.warn. */
export const defaultLogCreator: logCreator = () => ({ namespace, level, label, log }) => {
  const prefix = namespace !== '' ? `[${namespace}] ` : ''
  const line = JSON.stringify({ level: label, ...log, message: `${prefix}${log.message}` })
  if (level === logLevel.ERROR) console.error(line)
  else if (level === logLevel.WARN) console.warn(line)
  else console.log(line)
}

// KAFKAJS_LOG_LEVEL overrides the configured level, as kafkajs documents.
function envLevel(): logLevel | undefined {
  const name = process.env.KAFKAJS_LOG_LEVEL?.toUpperCase()
  if (name === undefined) return undefined
  const v = (logLevel as unknown as Record<string, number | undefined>)[name]
  return typeof v === 'number' ? v : undefined
}

/** The root logger of a Kafka instance; namespaces share its level unless given their own. */
export function createLogger(level: logLevel = logLevel.INFO, creator: logCreator = defaultLogCreator): Logger {
  const shared = { level: envLevel() ?? level }
  const write = creator(shared.level)
  const make = (namespace: string, own: { level: logLevel } | undefined): Logger => {
    const current = () => own?.level ?? shared.level
    const log = (at: logLevel) => (message: string, extra: object = {}) => {
      if (at > current() || current() === logLevel.NOTHING) return
      write({ namespace, level: at, label: LABELS[at]!, log: { timestamp: new Date().toISOString(), logger: 'kafkajs', ...extra, message } })
    }
    return {
      error: log(logLevel.ERROR),
      warn: log(logLevel.WARN),
      info: log(logLevel.INFO),
      debug: log(logLevel.DEBUG),
      namespace: (ns, l) => make(ns, l === undefined ? own : { level: envLevel() ?? l }),
      setLogLevel: (l) => {
        if (own !== undefined) own.level = l
        else shared.level = l
      },
    }
  }
  return make('', undefined)
}

/** The native clients log pino-style (object, message); this forwards to a kafkajs logger. */
export function nativeLogger(logger: Logger): NativeLogger {
  const at = (fn: (m: string, extra?: object) => void) => (obj: object, msg?: string) => fn(msg ?? '', obj)
  return { error: at(logger.error), warn: at(logger.warn), info: at(logger.info), debug: at(logger.debug) }
}
