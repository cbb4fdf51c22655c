import { readFileSync } from 'node:fs'
import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import { join } from 'node:path'
import { DurableFile } from '../durable-file.js'
import { UnsupportedFormatError } from '../log/errors.js'
import type { LogManager } from '../log/index.js'

export const QUOTAS_FILE = 'client-quotas.json'
export const QUOTAS_FORMAT_VERSION = 1

/** Kafka's entity types (ClientQuotaEntity), in the order this broker writes them. */
export const ENTITY_TYPES = ['user', 'client-id', 'ip'] as const
export type EntityType = (typeof ENTITY_TYPES)[number]
/** An entity: each type present maps to a name, or to null for that type's default entity. */
export type QuotaEntity = Partial<Record<EntityType, string | null>>

/** Kafka's quota keys (QuotaConfig) and their ConfigDef types, which decide what values are valid. */
export const USER_CLIENT_KEYS = {
  producer_byte_rate: 'LONG',
  consumer_byte_rate: 'LONG',
  request_percentage: 'DOUBLE',
  controller_mutation_rate: 'DOUBLE',
} as const
export const IP_KEYS = { connection_creation_rate: 'INT' } as const
export type QuotaKey = keyof typeof USER_CLIENT_KEYS | keyof typeof IP_KEYS

export interface QuotaOp {
  key: string
  value: number
  remove: boolean
}

export interface Alteration {
  /** As sent: [type, name] pairs. */
  entity: readonly { entityType: string; entityName: string | null }[]
  ops: readonly QuotaOp[]
}

/** One entity's answer: the entity as the request named it, and the error, if any. */
export interface AlterResult {
  entity: Alteration['entity']
  error: string | undefined
}

export const entityKey = (e: QuotaEntity): string => JSON.stringify(ENTITY_TYPES.filter((t) => t in e).map((t) => [t, e[t]]))

/** Java's ClientQuotaEntity.toString, which Kafka's messages print. */
const describeEntity = (pairs: Alteration['entity']): string => `ClientQuotaEntity(entries={${pairs.map((p) => `${p.entityType}=${p.entityName}`).join(', ')}})`

/**
 * The client quotas set with AlterClientQuotas (Kafka keeps them as ClientQuotaRecords in its
 * metadata log) and their durable copy, `<dataDir>/client-quotas.json`. Validation follows
 * Kafka's ClientQuotaControlManager, message for message, so kafka-configs.sh reports the same
 * errors.
 */
export class QuotaStore {
  private readonly entries = new Map<string, { entity: QuotaEntity; values: Map<string, number> }>()
  private readonly file: DurableFile | undefined
  private readonly path: string | undefined
  private readonly listeners: (() => void)[] = []

  /** Runs `fn` after every applied change, so enforcement sees it at once. */
  onChange(fn: () => void): void {
    this.listeners.push(fn)
  }

  private changed(): void {
    for (const fn of this.listeners) fn()
  }

  constructor(persist?: { dataDir: string; logs: LogManager }) {
    if (persist !== undefined) {
      this.path = join(persist.dataDir, QUOTAS_FILE)
      this.file = new DurableFile(this.path, QUOTAS_FILE, persist.logs, () => this.contents())
      this.load(this.path)
    }
  }

  private load(path: string): void {
    let text: string
    try {
      text = readFileSync(path, 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
      throw err
    }
    let parsed: { version?: unknown; quotas?: unknown }
    try {
      parsed = JSON.parse(text) as typeof parsed
    } catch (err) {
      throw new Error(`${path} is not valid JSON (${(err as Error).message}); restore it, or remove it to start with no client quotas`)
    }
    if (typeof parsed.version === 'number' && parsed.version > QUOTAS_FORMAT_VERSION) throw new UnsupportedFormatError(path, parsed.version, QUOTAS_FORMAT_VERSION)
    if (parsed.version !== QUOTAS_FORMAT_VERSION || !Array.isArray(parsed.quotas)) throw new Error(`${path}: unknown layout`)
    for (const q of parsed.quotas as { entity: QuotaEntity; values: Record<string, number> }[]) {
      const pairs = Object.entries(q.entity ?? {}).map(([entityType, entityName]) => ({ entityType, entityName }))
      const checked = checkEntity(pairs)
      if (typeof checked === 'string') throw new Error(`${path}: ${checked}`)
      const keys = keysFor(checked)
      if (typeof keys === 'string') throw new Error(`${path}: ${keys}`)
      const values = new Map<string, number>()
      for (const [k, v] of Object.entries(q.values ?? {})) {
        const bad = checkValue(keys, k, v)
        if (bad !== undefined) throw new Error(`${path}: ${bad}`)
        values.set(k, v)
      }
      if (values.size > 0) this.entries.set(entityKey(checked), { entity: checked, values })
    }
  }

  private contents(): string {
    const quotas = [...this.entries.values()].map((e) => ({ entity: e.entity, values: Object.fromEntries(e.values) }))
    return JSON.stringify({ version: QUOTAS_FORMAT_VERSION, quotas }, null, 2) + '\n'
  }

  /** The value of `key` set on exactly this entity, if any. */
  get(entity: QuotaEntity, key: string): number | undefined {
    return this.entries.get(entityKey(entity))?.values.get(key)
  }

  /** Every entity with at least one value. */
  all(): IterableIterator<{ entity: QuotaEntity; values: ReadonlyMap<string, number> }> {
    return this.entries.values()
  }

  /**
   * Validates every alteration, applies the valid ones (unless validateOnly) and resolves, once
   * the change is durable, with one result per distinct entity as Kafka's controller answers:
   * an entity named twice gets "Ignoring duplicate entity" (the first one's change still
   * applies, as in Kafka), and a key named twice in one entity ends the same way.
   */
  async alter(alterations: readonly Alteration[], validateOnly: boolean): Promise<AlterResult[]> {
    const results = new Map<string, AlterResult>()
    const planned: { entity: QuotaEntity; set: Map<string, number | null> }[] = []
    for (const a of alterations) {
      // Kafka's request folds the entity into a map: a type named twice keeps its last name.
      const byType = new Map<string, string | null>()
      for (const p of a.entity) byType.set(p.entityType, p.entityName)
      const pairs = [...byType].map(([entityType, entityName]) => ({ entityType, entityName }))
      const id = JSON.stringify([...byType].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)))
      const set = new Map<string, number | null>()
      let dupKey: string | undefined
      for (const op of a.ops) {
        if (set.has(op.key)) dupKey ??= op.key
        else set.set(op.key, op.remove ? null : op.value)
      }
      if (results.has(id) || dupKey !== undefined) {
        results.set(id, { entity: pairs, error: `Ignoring duplicate entity ${describeEntity(pairs)}` })
        continue
      }
      results.set(id, { entity: pairs, error: await this.plan(pairs, set, planned) })
    }
    if (!validateOnly && planned.length > 0) await this.apply(planned)
    return [...results.values()]
  }

  private async plan(pairs: Alteration['entity'], set: Map<string, number | null>, planned: { entity: QuotaEntity; set: Map<string, number | null> }[]): Promise<string | undefined> {
    const checked = checkEntity(pairs)
    if (typeof checked === 'string') return checked
    const keys = keysFor(checked)
    if (typeof keys === 'string') return keys
    if (checked.ip !== undefined && checked.ip !== null && isIP(checked.ip) === 0) {
      // InetAddress.getByName: a host name is valid when it resolves.
      const resolves = await lookup(checked.ip).then(
        () => true,
        () => false,
      )
      if (!resolves) return `${checked.ip} is not a valid IP or resolvable host.`
    }
    for (const [k, v] of set) {
      if (v === null) continue
      const bad = checkValue(keys, k, v)
      if (bad !== undefined) return bad
    }
    planned.push({ entity: checked, set })
    return undefined
  }

  private async apply(planned: { entity: QuotaEntity; set: Map<string, number | null> }[]): Promise<void> {
    const undo = new Map<string, { entity: QuotaEntity; values: Map<string, number> } | undefined>()
    for (const p of planned) {
      const key = entityKey(p.entity)
      const before = this.entries.get(key)
      if (!undo.has(key)) undo.set(key, before === undefined ? undefined : { entity: before.entity, values: new Map(before.values) })
      const values = new Map(before?.values ?? [])
      for (const [k, v] of p.set) {
        if (v === null) values.delete(k)
        else values.set(k, v)
      }
      if (values.size === 0) this.entries.delete(key)
      else this.entries.set(key, { entity: p.entity, values })
    }
    this.changed()
    if (this.file === undefined) return
    try {
      await this.file.save()
    } catch (err) {
      // Not durable, so not applied: the quotas in force stay what the file holds.
      for (const [key, before] of undo) {
        if (before === undefined) this.entries.delete(key)
        else this.entries.set(key, before)
      }
      this.changed()
      throw err
    }
  }

}

function checkEntity(pairs: Alteration['entity']): QuotaEntity | string {
  if (pairs.length === 0) return 'Invalid empty client quota entity'
  const entity: QuotaEntity = {}
  for (const { entityType, entityName } of pairs) {
    if (!(ENTITY_TYPES as readonly string[]).includes(entityType)) return `Unhandled client quota entity type: ${entityType}`
    entity[entityType as EntityType] = entityName
    if (entityName !== null && entityName === '') return `Empty ${entityType} not supported`
  }
  return entity
}

/** Which keys an entity may carry: IP alone, or user and/or client-id (configKeysForEntityType). */
function keysFor(entity: QuotaEntity): Record<string, string> | string {
  const hasIp = 'ip' in entity
  if (hasIp) {
    if ('user' in entity || 'client-id' in entity) return 'Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId'
    return IP_KEYS
  }
  if ('user' in entity || 'client-id' in entity) return USER_CLIENT_KEYS
  return 'Invalid empty client quota entity'
}

function checkValue(keys: Record<string, string>, key: string, value: number): string | undefined {
  const type = keys[key]
  if (type === undefined) return `Invalid configuration key ${key}`
  if (!(value > 0)) return `Quota ${key} must be greater than 0`
  // Kafka would take an infinite request_percentage; JSON cannot hold one, and it means "no quota".
  if (!Number.isFinite(value)) return `Quota ${key} must be a finite number`
  if (type === 'DOUBLE') return undefined
  if (type === 'INT' && value > 2 ** 31 - 1) return `Proposed value for ${key} is too large for an INT.`
  if (type === 'LONG' && value > 2 ** 63) return `Proposed value for ${key} is too large for a LONG.`
  if (Math.abs(value % 1) > 1e-6) return `${key} cannot be a fractional value.`
  return undefined
}
