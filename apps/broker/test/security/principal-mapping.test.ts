import { describe, expect, it } from 'vitest'
import { NoMatchingRuleError, mapPrincipal, parsePrincipalRules } from '../../src/security/principal-mapping.js'

describe('ssl.principal.mapping.rules (KIP-371)', () => {
  const dn = 'CN=kafka-user,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown'

  it('applies the first matching rule, with L and U, and DEFAULT as the fallback', () => {
    const rules = parsePrincipalRules('RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/U,DEFAULT')
    expect(mapPrincipal(rules, dn)).toBe('kafka-user')
    expect(mapPrincipal(rules, 'CN=Bob,OU=Sales,O=Acme')).toBe('BOB@SALES')
    expect(mapPrincipal(rules, 'CN=plain')).toBe('CN=plain')
  })

  it('matches the whole name, takes escaped slashes, and refuses a name no rule covers', () => {
    const rules = parsePrincipalRules('RULE:CN=a\\/b/slash/')
    expect(mapPrincipal(rules, 'CN=a/b')).toBe('slash')
    // A partial match is not a match (Java's Matcher.matches()).
    expect(() => mapPrincipal(rules, 'CN=a/b,O=x')).toThrow(NoMatchingRuleError)
  })

  it('refuses rules it cannot parse', () => {
    expect(() => parsePrincipalRules('RULE:(/x/')).toThrow(/bad pattern/)
    expect(() => parsePrincipalRules('NOPE')).toThrow(/cannot parse/)
  })
})
