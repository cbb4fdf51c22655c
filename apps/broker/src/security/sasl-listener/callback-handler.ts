import { existsSync } from 'node:fs'
import { isAbsolute, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

/**
 * What a PLAIN server callback handler is asked: Kafka's PlainServerCallbackHandler gets the
 * user name and password of one exchange; here the listener it came in on is named too.
 */
export interface PlainAuthenticateRequest {
  mechanism: 'PLAIN'
  username: string
  password: string
  /** The listener's name, upper case (e.g. SASL_SSL). */
  listener: string
}

/**
 * The module `sasl.server.callback.handler.class` names (Kafka takes a Java class; this broker
 * takes an ES or CommonJS module path): it exports `authenticate`, or a default export that is
 * that function or an object with it. true lets the user in; false, a rejection or a throw fails
 * that one authentication with Kafka's "Invalid username or password".
 */
export interface PlainCallbackHandler {
  authenticate(request: PlainAuthenticateRequest): boolean | Promise<boolean>
}

type Authenticate = PlainCallbackHandler['authenticate']

function pick(mod: Record<string, unknown>): Authenticate | undefined {
  const candidates = [mod.authenticate, mod.default, (mod.default as Record<string, unknown> | undefined)?.authenticate]
  const fn = candidates.find((c) => typeof c === 'function') as Authenticate | undefined
  return fn
}

/**
 * Loads a handler module once, at start. A missing file, a module that fails to load or one
 * without an authenticate function is an Error naming the setting, so the broker does not start
 * half-configured.
 */
export async function loadPlainCallbackHandler(setting: string, path: string): Promise<Authenticate> {
  const file = isAbsolute(path) ? path : resolve(process.cwd(), path)
  if (!existsSync(file)) throw new Error(`${setting}: ${file} does not exist (a JavaScript module exporting authenticate({ username, password, listener }))`)
  let mod: Record<string, unknown>
  try {
    mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>
  } catch (err) {
    throw new Error(`${setting}: cannot load ${file}: ${(err as Error).message}`)
  }
  const fn = pick(mod)
  if (fn === undefined) {
    throw new Error(`${setting}: ${file} exports no authenticate function (export function authenticate({ username, password, listener }) { ... })`)
  }
  const owner = typeof mod.authenticate === 'function' ? mod : typeof mod.default === 'function' ? undefined : mod.default
  return (request) => fn.call(owner, request)
}
