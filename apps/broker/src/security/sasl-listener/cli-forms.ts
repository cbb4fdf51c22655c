import { ConfigError } from '../../config.js'
import type { ListenerSpec } from '../listeners.js'
import { SUPPORTED_MECHANISMS } from '../mechanisms.js'
import { LISTENER_NAME_PREFIX, parseListenerSaslSettings } from './settings.js'

/**
 * The flag and environment forms of Kafka's listener-prefixed keys (KIP-103), derived the way
 * config.ts derives every other option from its Kafka name: dots become dashes for the flag
 * (`listener.name.external.scram-sha-512.sasl.jaas.config` is
 * `--listener-name-external-scram-sha-512-sasl-jaas-config`) and underscores, upper case and a
 * TIDELOG_ prefix for the environment (`TIDELOG_LISTENER_NAME_EXTERNAL_SCRAM_SHA_512_SASL_JAAS_CONFIG`).
 * Listener names (`SASL_SSL`) and mechanisms (`SCRAM-SHA-256`) hold `_` and `-` themselves, so
 * a form is read back by matching the configured listeners and the served mechanisms, not by
 * splitting on separators.
 */
export const LISTENER_NAME_FLAG = 'listener-name-'
export const LISTENER_NAME_ENV = 'TIDELOG_LISTENER_NAME_'

export interface ListenerNameForm {
  /** `--listener-name-...` or `environment TIDELOG_LISTENER_NAME_...`, for error messages. */
  source: string
  /** What follows the prefix: `<listener>-<setting>` or `<LISTENER>_<SETTING>`. */
  tail: string
  value: string
}

/** Takes the `--listener-name-*` flags (`--f v` and `--f=v`) out of argv, so parseArgs sees only the table's flags. */
export function takeListenerNameFlags(argv: readonly string[]): { argv: string[]; forms: ListenerNameForm[] } {
  const rest: string[] = []
  const forms: ListenerNameForm[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (!a.startsWith(`--${LISTENER_NAME_FLAG}`)) {
      rest.push(a)
      continue
    }
    const eq = a.indexOf('=')
    const flag = eq < 0 ? a : a.slice(0, eq)
    let value: string | undefined = eq < 0 ? argv[i + 1] : a.slice(eq + 1)
    if (eq < 0) {
      if (value === undefined || value.startsWith('--')) throw new ConfigError(`${flag}: needs a value`)
      i++
    }
    forms.push({ source: flag, tail: flag.slice(2 + LISTENER_NAME_FLAG.length), value })
  }
  return { argv: rest, forms }
}

/** The `TIDELOG_LISTENER_NAME_*` variables that are set (an empty one is unset, as for every option). */
export function listenerNameEnv(env: NodeJS.ProcessEnv): ListenerNameForm[] {
  return Object.entries(env)
    .filter((e): e is [string, string] => e[0].startsWith(LISTENER_NAME_ENV) && e[1] !== undefined && e[1] !== '')
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => ({ source: `environment ${name}`, tail: name.slice(LISTENER_NAME_ENV.length), value }))
}

const norm = (s: string): string => s.toLowerCase().replace(/[-_.]+/g, '.')

/** The Kafka key a form stands for, e.g. `listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config`. */
export function listenerNameKey(form: ListenerNameForm, listeners: readonly ListenerSpec[]): string {
  const tail = norm(form.tail)
  // The longest name wins, so listeners SASL and SASL_SSL are told apart.
  const listener = listeners
    .filter((l) => tail.startsWith(`${norm(l.name)}.`))
    .sort((a, b) => b.name.length - a.name.length)[0]
  if (listener === undefined) {
    throw new ConfigError(
      `${form.source}: names none of the listeners (${listeners.map((l) => l.name.toLowerCase()).join(', ')}); ` +
        `the form is --${LISTENER_NAME_FLAG}<listener>-<setting> or ${LISTENER_NAME_ENV}<LISTENER>_<SETTING>`,
    )
  }
  let setting = tail.slice(norm(listener.name).length + 1)
  let mechanism = ''
  for (const m of SUPPORTED_MECHANISMS) {
    if (setting.startsWith(`${norm(m)}.`)) {
      mechanism = `${m.toLowerCase()}.`
      setting = setting.slice(norm(m).length + 1)
      break
    }
  }
  // Kafka's setting names are lower-case words joined by dots, so the rest maps back exactly.
  return `${LISTENER_NAME_PREFIX}${listener.name.toLowerCase()}.${mechanism}${setting}`
}

/**
 * Adds the environment forms, then the flags, over the config file's listener-prefixed keys
 * (flag > environment > file, as for every option). Each is checked on its own, so an unknown
 * listener or setting is a ConfigError that names the flag or variable the user typed.
 */
export function applyListenerNameForms(
  fileConfigs: Readonly<Record<string, string>>,
  forms: readonly ListenerNameForm[],
  listeners: readonly ListenerSpec[],
): Record<string, string> {
  const out: Record<string, string> = { ...fileConfigs }
  for (const form of forms) {
    const key = listenerNameKey(form, listeners)
    try {
      parseListenerSaslSettings({ [key]: form.value }, listeners)
    } catch (err) {
      if (err instanceof ConfigError) throw new ConfigError(`${form.source}: ${err.message}`)
      throw err
    }
    out[key] = form.value
  }
  return out
}
