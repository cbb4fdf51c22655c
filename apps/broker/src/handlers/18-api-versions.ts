import { ApiVersions, ErrorCodes, type ApiVersionsResponseApiVersion } from '@tidelog/protocol'
import { defineHandler } from './types.js'

// KIP-511: client software names and versions are restricted to this shape;
// anything else is an INVALID_REQUEST.
const SOFTWARE = /^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$/

/**
 * ApiVersions 0-4, answering with the registry's own ranges. A version we do not
 * know is answered by the server itself, on a v0 body and header, with
 * UNSUPPORTED_VERSION and the same list, so the client can pick a version and
 * retry (KIP-511).
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
      return { errorCode: ErrorCodes.NONE, apiKeys: advertised(), throttleTimeMs: 0, finalizedFeaturesEpoch: -1n }
    },
    errorResponse(_req, errorCode) {
      return { errorCode, apiKeys: advertised(), throttleTimeMs: 0 }
    },
  })
}
