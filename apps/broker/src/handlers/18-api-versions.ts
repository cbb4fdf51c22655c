import {
  ApiKeys,
  ApiVersions,
  ErrorCodes,
  type ApiVersionsResponseApiVersion,
  type ApiVersionsResponseFinalizedFeatureKey,
  type ApiVersionsResponseSupportedFeatureKey,
} from '@tidelog/protocol'
import { defineHandler } from './types.js'

// KIP-511: client software names and versions are restricted to this shape;
// anything else is an INVALID_REQUEST.
const SOFTWARE = /^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$/

/**
 * Kafka 4.0's metadata.version range (4.0-IV3 = 25, the level a fresh 4.0.2 cluster
 * finalizes; 7 = 3.3-IV3, the oldest 4.0 accepts). The API ranges follow 4.0, so this is
 * the level they correspond to.
 */
const METADATA_VERSION = { min: 7, max: 25 } as const

/**
 * KIP-890 part 2 is transaction.version 2: Produce v12 (partitions added implicitly) and
 * EndTxn v5 (the epoch bumped at every commit or abort). Java 4.x producers switch to it
 * when the broker finalizes level 2, so it is finalized only when the registry really
 * serves both; below that nothing the client sees differs from level 0 (level 1 only
 * changes the coordinator's own log records), so no level is claimed.
 */
function transactionVersion(apis: readonly ApiVersionsResponseApiVersion[]): number {
  const max = (key: number) => apis.find((a) => a.apiKey === key)?.maxVersion ?? -1
  return max(ApiKeys.EndTxn) >= 5 && max(ApiKeys.Produce) >= 12 ? 2 : 0
}

interface Feature {
  name: string
  supported: { min: number; max: number }
  finalized: number
}

/** The features this broker implements a level above 0 of, as Kafka names them. */
export function brokerFeatures(apis: readonly ApiVersionsResponseApiVersion[]): Feature[] {
  const features: Feature[] = [{ name: 'metadata.version', supported: METADATA_VERSION, finalized: METADATA_VERSION.max }]
  const tv = transactionVersion(apis)
  if (tv > 0) features.push({ name: 'transaction.version', supported: { min: 0, max: tv }, finalized: tv })
  // KIP-932: Kafka lists the share-group APIs only once share.version 1 is finalized, so it is
  // claimed exactly when they are served. Level 2 (4.4) adds ShareFetch / ShareAcknowledge v2.
  const shares = apis.find((a) => a.apiKey === ApiKeys.ShareGroupHeartbeat) !== undefined
  if (shares) features.push({ name: 'share.version', supported: { min: 0, max: 1 }, finalized: 1 })
  return features
}

function featureFields(version: number, apis: readonly ApiVersionsResponseApiVersion[]) {
  const features = brokerFeatures(apis)
  // KIP-1022: before ApiVersions v4 a supported range starting at 0 is left out, since
  // older clients read a minimum of 0 as "not supported".
  const supportedFeatures: ApiVersionsResponseSupportedFeatureKey[] = features
    .filter((f) => version >= 4 || f.supported.min > 0)
    .map((f) => ({ name: f.name, minVersion: f.supported.min, maxVersion: f.supported.max }))
  // A level of 0 is never listed as finalized (Kafka removes the feature record instead).
  const finalized = features.filter((f) => f.finalized > 0)
  const finalizedFeatures: ApiVersionsResponseFinalizedFeatureKey[] = finalized.map((f) => ({
    name: f.name,
    minVersionLevel: f.finalized,
    maxVersionLevel: f.finalized,
  }))
  // Clients keep the finalized features of the highest epoch they have seen (Java's
  // ApiVersions.maxFinalizedFeaturesEpoch starts at -1, so -1 would hide them). Kafka uses
  // the metadata offset of the last feature change; the sum of the levels also only grows
  // when a level is raised, so a client that saw an older build's answer takes the new one.
  const finalizedFeaturesEpoch = BigInt(finalized.reduce((sum, f) => sum + f.finalized, 0))
  return { supportedFeatures, finalizedFeatures, finalizedFeaturesEpoch }
}

/**
 * ApiVersions 0-4, answering with the registry's own ranges and, from v3, the features
 * of the Kafka release the broker presents as. A version we do not know is answered by
 * the server itself, on a v0 body and header, with UNSUPPORTED_VERSION and the same
 * list, so the client can pick a version and retry (KIP-511).
 */
export function apiVersionsHandler(advertised: () => ApiVersionsResponseApiVersion[]) {
  return defineHandler({
    api: ApiVersions,
    minVersion: 0,
    maxVersion: 4,
    handle(ctx, req) {
      if (ctx.version >= 3) {
        const name = req.clientSoftwareName ?? ''
        const version = req.clientSoftwareVersion ?? ''
        if (!SOFTWARE.test(name) || !SOFTWARE.test(version)) {
          return { errorCode: ErrorCodes.INVALID_REQUEST, apiKeys: [], throttleTimeMs: 0 }
        }
      }
      const apiKeys = advertised()
      const features = ctx.version >= 3 ? featureFields(ctx.version, apiKeys) : {}
      return { errorCode: ErrorCodes.NONE, apiKeys, throttleTimeMs: 0, ...features }
    },
    errorResponse(_req, errorCode) {
      return { errorCode, apiKeys: advertised(), throttleTimeMs: 0 }
    },
  })
}
