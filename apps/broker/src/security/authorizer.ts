import type { AclStore } from './acl-store.js'
import {
  type AclBinding,
  AclOperation,
  AclPermission,
  PatternType,
  ResourceType,
  WILDCARD_HOST,
  WILDCARD_PRINCIPAL,
  WILDCARD_RESOURCE,
} from './acl.js'

/** The authorizer class names accepted as "ACLs on" (KRaft's, and ZooKeeper-era AclAuthorizer's). */
export const STANDARD_AUTHORIZER = 'org.apache.kafka.metadata.authorizer.StandardAuthorizer'
export const ACCEPTED_AUTHORIZERS: readonly string[] = [STANDARD_AUTHORIZER, 'kafka.security.authorizer.AclAuthorizer']

/** Who is asking: the connection's principal (`User:name`) and its address. */
export interface Requester {
  principal: string
  host: string
}

// StandardAuthorizerData: an ALLOW of any of these grants DESCRIBE (DESCRIBE_CONFIGS); a DENY only denies its own operation.
const IMPLIES: Partial<Record<number, readonly number[]>> = {
  [AclOperation.DESCRIBE]: [AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER],
  [AclOperation.DESCRIBE_CONFIGS]: [AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS],
}

/** The operations each resource type has, for the authorized-operations bit sets (Kafka's AclEntry.supportedOperations). */
export const SUPPORTED_OPERATIONS: Partial<Record<number, readonly number[]>> = {
  [ResourceType.TOPIC]: [AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE, AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS],
  [ResourceType.GROUP]: [AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS],
  [ResourceType.CLUSTER]: [AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER, AclOperation.DESCRIBE],
  [ResourceType.TRANSACTIONAL_ID]: [AclOperation.DESCRIBE, AclOperation.WRITE, AclOperation.TWO_PHASE_COMMIT],
  [ResourceType.DELEGATION_TOKEN]: [AclOperation.DESCRIBE],
  [ResourceType.USER]: [AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS],
}

export interface AuthorizerOptions {
  /** super.users: `User:a;User:b`. */
  superUsers: string
  /** allow.everyone.if.no.acl.found: what a resource no ACL names answers. */
  allowEveryoneIfNoAclFound: boolean
}

/**
 * Kafka's StandardAuthorizer decisions over the stored bindings: super users may do anything;
 * otherwise the bindings whose pattern covers the resource (the literal name, the literal `*`,
 * and every prefix) are consulted: a matching DENY wins, then a matching ALLOW; a resource no
 * binding covers answers allow.everyone.if.no.acl.found, one that has bindings for others is denied.
 */
export class StandardAuthorizer {
  private readonly superUsers: ReadonlySet<string>

  constructor(
    readonly store: AclStore,
    private readonly options: AuthorizerOptions,
  ) {
    this.superUsers = new Set(options.superUsers.split(';').map((s) => s.trim()).filter((s) => s !== ''))
  }

  isSuperUser(principal: string): boolean {
    return this.superUsers.has(principal)
  }

  private entryMatches(who: Requester, b: AclBinding): boolean {
    return (b.principal === who.principal || b.principal === WILDCARD_PRINCIPAL) && (b.host === WILDCARD_HOST || b.host === who.host)
  }

  private static covers(b: AclBinding, resourceType: number, name: string): boolean {
    if (b.resourceType !== resourceType) return false
    if (b.patternType === PatternType.PREFIXED) return name.startsWith(b.resourceName)
    return b.resourceName === name || b.resourceName === WILDCARD_RESOURCE
  }

  private static grants(b: AclBinding, operation: number): boolean {
    if (b.operation === AclOperation.ALL) return true
    if (b.permissionType === AclPermission.DENY) return b.operation === operation
    return (IMPLIES[operation] ?? [operation]).includes(b.operation)
  }

  authorize(who: Requester, operation: number, resourceType: number, name: string): boolean {
    if (this.isSuperUser(who.principal)) return true
    let covered = false
    let allowed = false
    for (const b of this.store.all()) {
      if (!StandardAuthorizer.covers(b, resourceType, name)) continue
      covered = true
      if (!this.entryMatches(who, b) || !StandardAuthorizer.grants(b, operation)) continue
      if (b.permissionType === AclPermission.DENY) return false
      allowed = true
    }
    return allowed || (!covered && this.options.allowEveryoneIfNoAclFound)
  }

  /**
   * Kafka's Authorizer.authorizeByResourceType (KIP-679): may the requester do `operation` on at
   * least one resource of the type? An ALLOW counts unless a DENY on the same literal name, on a
   * prefix of it, or on the wildcard cancels it.
   */
  authorizeByResourceType(who: Requester, operation: number, resourceType: number): boolean {
    // A name no ACL mentions: super users and allow.everyone.if.no.acl.found answer here.
    if (this.authorize(who, operation, resourceType, 'hardcode')) return true
    const denyLiteral = new Set<string>()
    const denyPrefix = new Set<string>()
    const allows: AclBinding[] = []
    for (const b of this.store.all()) {
      if (b.resourceType !== resourceType || !this.entryMatches(who, b)) continue
      if (b.operation !== operation && b.operation !== AclOperation.ALL) continue
      if (b.permissionType === AclPermission.DENY) {
        if (b.patternType === PatternType.LITERAL && b.resourceName === WILDCARD_RESOURCE) return false
        ;(b.patternType === PatternType.LITERAL ? denyLiteral : denyPrefix).add(b.resourceName)
      } else {
        if (b.patternType === PatternType.LITERAL && b.resourceName === WILDCARD_RESOURCE) return true
        allows.push(b)
      }
    }
    return allows.some((a) => {
      if (a.patternType === PatternType.LITERAL && denyLiteral.has(a.resourceName)) return false
      for (let i = 1; i <= a.resourceName.length; i++) if (denyPrefix.has(a.resourceName.slice(0, i))) return false
      return true
    })
  }

  /** The bit set of the operations the requester may do on a resource (KIP-430's authorized operations). */
  authorizedOperations(who: Requester, resourceType: number, name: string): number {
    let bits = 0
    for (const op of SUPPORTED_OPERATIONS[resourceType] ?? []) if (this.authorize(who, op, resourceType, name)) bits |= 1 << op
    return bits
  }
}
