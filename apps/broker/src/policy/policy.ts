/**
 * Kafka's topic-creation and config-change policies (KIP-108 CreateTopicPolicy, KIP-133
 * AlterConfigPolicy), for a Node broker: `create.topic.policy.class.name` and
 * `alter.config.policy.class.name` name a module (a file path, absolute or relative to the
 * working directory, or a package) whose default export is a policy class (constructed once,
 * with no arguments) or a policy object. Loaded at startup: a module that cannot be loaded,
 * or whose export has no validate(), stops the broker, as a missing class stops Kafka.
 *
 * validate() refuses by throwing PolicyViolationError (or any error named
 * "PolicyViolationError", for a module that does not import this package); the client gets
 * POLICY_VIOLATION with its message, as Kafka answers. Any other error is a bug of the policy:
 * it is logged and answered UNKNOWN_SERVER_ERROR for that topic or resource, changing nothing.
 * validate() may return a promise.
 */
import { isAbsolute, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { ErrorCodes } from '@tidelog/protocol'
import type { BrokerConfig } from '../config.js'
import type { Logger } from '../logger.js'

/** Thrown by a policy to refuse a request: POLICY_VIOLATION with this message. */
export class PolicyViolationError extends Error {
  override readonly name = 'PolicyViolationError'
}

/** Kafka's CreateTopicPolicy.RequestMetadata. */
export interface CreateTopicRequestMetadata {
  readonly topic: string
  /** null when the request gave manual assignments; else the count, -1 resolved to the broker default. */
  readonly numPartitions: number | null
  /** null when the request gave manual assignments; else 1 (-1 resolved to the default). */
  readonly replicationFactor: number | null
  /** Partition to broker ids, when the request gave manual assignments; else null. */
  readonly replicasAssignments: ReadonlyMap<number, readonly number[]> | null
  /** The configs the request gave (not the defaults). */
  readonly configs: Readonly<Record<string, string>>
}

/** Kafka's ConfigResource.Type names. */
export type ConfigResourceTypeName = 'TOPIC' | 'BROKER' | 'BROKER_LOGGER' | 'GROUP'

/** Kafka's AlterConfigPolicy.RequestMetadata. */
export interface AlterConfigRequestMetadata {
  readonly resource: { readonly type: ConfigResourceTypeName; readonly name: string }
  /**
   * The configs the request changes, as KRaft's controller passes them: a new value, or null
   * for one deleted (IncrementalAlterConfigs DELETE); AlterConfigs gives the configs it sets.
   */
  readonly configs: Readonly<Record<string, string | null>>
}

export interface CreateTopicPolicy {
  /** Kafka's Configurable: called once after loading, with the broker's settings. */
  configure?(config: Readonly<BrokerConfig>): void
  validate(metadata: CreateTopicRequestMetadata): void | Promise<void>
  close?(): void | Promise<void>
}

export interface AlterConfigPolicy {
  configure?(config: Readonly<BrokerConfig>): void
  validate(metadata: AlterConfigRequestMetadata): void | Promise<void>
  close?(): void | Promise<void>
}

export interface Policies {
  createTopic?: CreateTopicPolicy
  alterConfig?: AlterConfigPolicy
}

/** Why a policy module could not be used; startup fails with it. */
export class PolicyLoadError extends Error {
  override readonly name = 'PolicyLoadError'
}

/** What a plugin module must export: used in the load errors, and the method that proves the shape. */
export interface PluginShape {
  readonly kind: string
  readonly method: string
  readonly error: new (message: string) => Error
}
const POLICY: PluginShape = { kind: 'policy', method: 'validate', error: PolicyLoadError }

/**
 * Loads a Kafka-style plugin (a policy, client.quota.callback.class): a module whose default
 * export is a class (constructed once, no arguments) or an object, with `shape.method`;
 * configure(config) is called once, as Kafka's Configurable.
 */
export async function loadPlugin<T>(setting: string, specifier: string, config: BrokerConfig, shape: PluginShape = POLICY): Promise<T> {
  const url = specifier.startsWith('.') || isAbsolute(specifier) ? pathToFileURL(resolve(specifier)).href : specifier
  let mod: { default?: unknown }
  try {
    mod = (await import(url)) as { default?: unknown }
  } catch (err) {
    throw new shape.error(`${setting}: cannot load ${specifier}: ${(err as Error).message}`)
  }
  const exported = mod.default
  let plugin: unknown
  try {
    plugin = typeof exported === 'function' ? new (exported as new () => unknown)() : exported
  } catch (err) {
    throw new shape.error(`${setting}: constructing the default export of ${specifier} failed: ${(err as Error).message}`)
  }
  if (plugin === null || typeof plugin !== 'object' || typeof (plugin as Record<string, unknown>)[shape.method] !== 'function') {
    throw new shape.error(`${setting}: the default export of ${specifier} is not a ${shape.kind} (a class or an object with ${shape.method}())`)
  }
  ;(plugin as { configure?: (c: BrokerConfig) => void }).configure?.(config)
  return plugin as T
}

/** The broker's policies, by its config object: loaded by startBroker, read by the handlers. */
const loaded = new WeakMap<BrokerConfig, Policies>()

export async function loadPolicies(config: BrokerConfig): Promise<void> {
  const p: Policies = {}
  if (config.createTopicPolicyClassName !== undefined) p.createTopic = await loadPlugin<CreateTopicPolicy>('create.topic.policy.class.name', config.createTopicPolicyClassName, config)
  if (config.alterConfigPolicyClassName !== undefined) p.alterConfig = await loadPlugin<AlterConfigPolicy>('alter.config.policy.class.name', config.alterConfigPolicyClassName, config)
  loaded.set(config, p)
}

export const policiesOf = (config: BrokerConfig): Policies => loaded.get(config) ?? {}

/** Kafka's AutoCloseable.close at shutdown; a failing close is logged, never thrown. */
export async function closePolicies(config: BrokerConfig, logger: Logger): Promise<void> {
  const p = loaded.get(config)
  loaded.delete(config)
  for (const policy of [p?.createTopic, p?.alterConfig]) {
    try {
      await policy?.close?.()
    } catch (err) {
      logger.warn(`closing a policy failed: ${(err as Error).message}`)
    }
  }
}

export interface PolicyRefusal {
  errorCode: number
  errorMessage: string | null
}

/** Runs one validate(); undefined when it allowed the request. */
export async function checkPolicy<M>(policy: { validate(m: M): void | Promise<void> } | undefined, metadata: M, logger: Logger): Promise<PolicyRefusal | undefined> {
  if (policy === undefined) return undefined
  try {
    await policy.validate(metadata)
    return undefined
  } catch (err) {
    if (err instanceof Error && (err instanceof PolicyViolationError || err.name === 'PolicyViolationError')) {
      return { errorCode: ErrorCodes.POLICY_VIOLATION, errorMessage: err.message }
    }
    logger.error(`policy validate() failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`)
    return { errorCode: ErrorCodes.UNKNOWN_SERVER_ERROR, errorMessage: null }
  }
}
