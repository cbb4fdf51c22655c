import { apis, type ApiDefinition, type ApiVersionsResponse } from '@tidelog/protocol'
import { NoCommonVersionError } from './errors.js'

export interface VersionRange {
  minVersion: number
  maxVersion: number
}

// Api keys are small integers (Kafka's highest is below 100), so ranges live in plain arrays
// indexed by key: the per-request lookup is two array reads.
const NONE = -1

/**
 * The versions one broker offers (from its ApiVersions answer), and the version this client
 * uses for each API: the highest both sides support, computed once per connection.
 */
export class ApiVersionTable {
  private readonly brokerMin: number[] = []
  private readonly brokerMax: number[] = []
  private readonly best: number[] = []

  constructor(
    entries: readonly { apiKey: number; minVersion: number; maxVersion: number }[],
    /** "host:port", for error messages. */
    readonly broker = 'broker',
    /**
     * The cluster's finalized feature levels (ApiVersions v3+, KIP-584), e.g. transaction.version,
     * which decides whether a transactional producer may use KIP-890's second protocol.
     */
    readonly features: ReadonlyMap<string, number> = new Map(),
  ) {
    for (const e of entries) {
      if (e.apiKey < 0 || e.apiKey > 0x7fff) continue
      this.brokerMin[e.apiKey] = e.minVersion
      this.brokerMax[e.apiKey] = e.maxVersion
    }
    for (const api of apis.values()) this.best[api.apiKey] = this.compute(api, api.minVersion, api.maxVersion)
  }

  static fromResponse(response: ApiVersionsResponse, broker?: string): ApiVersionTable {
    return new ApiVersionTable(response.apiKeys, broker, new Map((response.finalizedFeatures ?? []).map((f) => [f.name, f.maxVersionLevel])))
  }

  /** The broker's range for an api key, or undefined when it does not offer the API. */
  brokerRange(apiKey: number): VersionRange | undefined {
    const max = this.brokerMax[apiKey]
    return max === undefined ? undefined : { minVersion: this.brokerMin[apiKey]!, maxVersion: max }
  }

  /** Whether the broker offers the API in a version this client speaks (optionally at least `minVersion`). */
  supports(api: ApiDefinition<unknown, unknown>, minVersion?: number): boolean {
    const v = this.best[api.apiKey] ?? NONE
    return v !== NONE && (minVersion === undefined || v >= minVersion)
  }

  /**
   * The highest version both sides support, optionally within [min, max] (e.g. a feature that
   * needs a newer version). Throws NoCommonVersionError when there is none.
   */
  highest(api: ApiDefinition<unknown, unknown>, min?: number, max?: number): number {
    let v: number
    if (min === undefined && max === undefined) v = this.best[api.apiKey] ?? NONE
    else v = this.compute(api, Math.max(min ?? api.minVersion, api.minVersion), Math.min(max ?? api.maxVersion, api.maxVersion))
    if (v === NONE) {
      throw new NoCommonVersionError(api.name, api.apiKey, this.broker, this.brokerRange(api.apiKey), {
        minVersion: Math.max(min ?? api.minVersion, api.minVersion),
        maxVersion: Math.min(max ?? api.maxVersion, api.maxVersion),
      })
    }
    return v
  }

  /** Like highest(), but -1 instead of an error. */
  highestOrNone(api: ApiDefinition<unknown, unknown>, min?: number, max?: number): number {
    if (min === undefined && max === undefined) return this.best[api.apiKey] ?? NONE
    return this.compute(api, Math.max(min ?? api.minVersion, api.minVersion), Math.min(max ?? api.maxVersion, api.maxVersion))
  }

  private compute(api: ApiDefinition<unknown, unknown>, lo: number, hi: number): number {
    const bMax = this.brokerMax[api.apiKey]
    if (bMax === undefined) return NONE
    const top = Math.min(hi, bMax)
    return top >= Math.max(lo, this.brokerMin[api.apiKey]!) ? top : NONE
  }
}
