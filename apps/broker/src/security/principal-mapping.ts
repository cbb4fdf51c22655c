/**
 * Kafka's ssl.principal.mapping.rules (KIP-371): an ordered list of `RULE:pattern/replacement/[LU]`
 * entries and `DEFAULT`. The first rule whose pattern matches the whole RFC 2253 subject gives
 * the name (L lowercases, U uppercases it); DEFAULT keeps the subject as is. When nothing
 * matches, Kafka fails the connection, and so do we.
 */
export interface PrincipalRule {
  kind: 'default' | 'rule'
  pattern?: RegExp
  replacement?: string
  caseChange?: 'L' | 'U' | ''
}

export class NoMatchingRuleError extends Error {
  constructor(dn: string) {
    super(`No rules apply to ${dn}, rules ssl.principal.mapping.rules`)
    this.name = 'NoMatchingRuleError'
  }
}

// A rule's pattern and replacement may contain '\/' and '\\'; anything else ends at '/'.
const RULE = /^\s*(?:(DEFAULT)|RULE:((?:\\.|[^\\/])*)\/((?:\\.|[^\\/])*)\/([LU]?))\s*(?:,|$)/

export function parsePrincipalRules(text: string): PrincipalRule[] {
  const rules: PrincipalRule[] = []
  let rest = text.trim()
  while (rest !== '') {
    const m = RULE.exec(rest)
    if (m === null) throw new Error(`ssl.principal.mapping.rules: cannot parse ${JSON.stringify(rest)} (expected RULE:pattern/replacement/[LU] or DEFAULT)`)
    if (m[1] !== undefined) rules.push({ kind: 'default' })
    else {
      const unescape = (s: string) => s.replace(/\\\//g, '/')
      let pattern: RegExp
      try {
        // Java's Matcher.matches(): the pattern must cover the whole name.
        pattern = new RegExp(`^(?:${unescape(m[2]!)})$`)
      } catch (err) {
        throw new Error(`ssl.principal.mapping.rules: bad pattern ${JSON.stringify(m[2])}: ${(err as Error).message}`)
      }
      rules.push({ kind: 'rule', pattern, replacement: unescape(m[3]!), caseChange: (m[4] ?? '') as 'L' | 'U' | '' })
    }
    rest = rest.slice(m[0].length).trim()
  }
  return rules
}

export function mapPrincipal(rules: readonly PrincipalRule[], dn: string): string {
  for (const r of rules) {
    if (r.kind === 'default') return dn
    if (!r.pattern!.test(dn)) continue
    const name = dn.replace(r.pattern!, r.replacement!)
    return r.caseChange === 'L' ? name.toLowerCase() : r.caseChange === 'U' ? name.toUpperCase() : name
  }
  throw new NoMatchingRuleError(dn)
}
