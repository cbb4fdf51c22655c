import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { DurableFile } from '../durable-file.js'
import { UnsupportedFormatError } from '../log/errors.js'
import type { LogManager } from '../log/index.js'
import {
  type AclBinding,
  type AclFilter,
  AclOperation,
  AclPermission,
  PatternType,
  ResourceType,
  bindingKey,
  filterMatches,
  invalidBinding,
} from './acl.js'

export const ACLS_FILE = 'acls.json'
export const ACLS_FORMAT_VERSION = 1

interface StoredAcl {
  resourceType: string
  resourceName: string
  patternType: string
  principal: string
  host: string
  operation: string
  permissionType: string
}

const toCode = (table: Record<string, number>, name: string, what: string, path: string): number => {
  const code = table[name]
  if (code === undefined) throw new Error(`${path}: unknown ${what} ${JSON.stringify(name)}`)
  return code
}
const toName = (table: Record<string, number>, code: number): string => Object.keys(table).find((k) => table[k] === code)!

/**
 * The ACL bindings and their durable copy, `<dataDir>/acls.json` (Kafka keeps them in its
 * metadata log), written with Kafka's names so the file reads like kafka-acls.sh output. A file
 * that cannot be read stops startup: starting without the ACLs it holds would change who may do
 * what without anyone deciding it.
 */
export class AclStore {
  private readonly bindings = new Map<string, AclBinding>()
  private readonly file: DurableFile
  private readonly path: string

  constructor(dataDir: string, logs: LogManager) {
    this.path = join(dataDir, ACLS_FILE)
    this.file = new DurableFile(this.path, ACLS_FILE, logs, () => this.contents())
    this.load()
  }

  private load(): void {
    let text: string
    try {
      text = readFileSync(this.path, 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
      throw err
    }
    let parsed: { version?: unknown; acls?: unknown }
    try {
      parsed = JSON.parse(text) as typeof parsed
    } catch (err) {
      throw new Error(`${this.path} is not valid JSON (${(err as Error).message}); restore it, or remove it to start with no ACLs`)
    }
    if (typeof parsed.version === 'number' && parsed.version > ACLS_FORMAT_VERSION) {
      throw new UnsupportedFormatError(this.path, parsed.version, ACLS_FORMAT_VERSION)
    }
    if (parsed.version !== ACLS_FORMAT_VERSION || !Array.isArray(parsed.acls)) throw new Error(`${this.path}: unknown layout`)
    for (const a of parsed.acls as StoredAcl[]) {
      const b: AclBinding = {
        resourceType: toCode(ResourceType, a.resourceType, 'resource type', this.path),
        resourceName: String(a.resourceName),
        patternType: toCode(PatternType, a.patternType, 'pattern type', this.path),
        principal: String(a.principal),
        host: String(a.host),
        operation: toCode(AclOperation, a.operation, 'operation', this.path),
        permissionType: toCode(AclPermission, a.permissionType, 'permission type', this.path),
      }
      const invalid = invalidBinding(b)
      if (invalid !== undefined) throw new Error(`${this.path}: ${invalid}`)
      this.bindings.set(bindingKey(b), b)
    }
  }

  private contents(): string {
    const acls: StoredAcl[] = [...this.bindings.values()].map((b) => ({
      resourceType: toName(ResourceType, b.resourceType),
      resourceName: b.resourceName,
      patternType: toName(PatternType, b.patternType),
      principal: b.principal,
      host: b.host,
      operation: toName(AclOperation, b.operation),
      permissionType: toName(AclPermission, b.permissionType),
    }))
    return JSON.stringify({ version: ACLS_FORMAT_VERSION, acls }, null, 2) + '\n'
  }

  all(): IterableIterator<AclBinding> {
    return this.bindings.values()
  }

  get size(): number {
    return this.bindings.size
  }

  matching(filter: AclFilter): AclBinding[] {
    return [...this.bindings.values()].filter((b) => filterMatches(filter, b))
  }

  /**
   * Adds valid bindings (an existing one is kept, as Kafka treats a duplicate as a success) and
   * resolves once the file holding them is durable. If that write fails, the change is undone.
   */
  async add(bindings: readonly AclBinding[]): Promise<void> {
    const added = bindings.filter((b) => !this.bindings.has(bindingKey(b)))
    if (added.length === 0) return
    for (const b of added) this.bindings.set(bindingKey(b), b)
    await this.durably(() => {
      for (const b of added) this.bindings.delete(bindingKey(b))
    })
  }

  /** Removes the bindings each filter matches; resolves with them, per filter, once durable. */
  async remove(filters: readonly AclFilter[]): Promise<AclBinding[][]> {
    const removed = filters.map((f) => {
      const hit = this.matching(f)
      for (const b of hit) this.bindings.delete(bindingKey(b))
      return hit
    })
    if (removed.every((r) => r.length === 0)) return removed
    await this.durably(() => {
      for (const b of removed.flat()) this.bindings.set(bindingKey(b), b)
    })
    return removed
  }

  private async durably(undo: () => void): Promise<void> {
    try {
      await this.file.save()
    } catch (err) {
      undo()
      throw err
    }
  }
}
