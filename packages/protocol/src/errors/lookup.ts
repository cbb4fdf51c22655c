import { ERROR_TABLE, type ErrorName, type KafkaErrorInfo } from './codes.js'

/** Every known error, ordered by code. */
export const KAFKA_ERRORS: readonly KafkaErrorInfo[] = ERROR_TABLE.map(([code, name, retriable, message]) =>
  Object.freeze({ code, name, retriable, message }),
)

// Codes are dense from -1 upwards, so a plain array indexed by code + 1 is the
// cheapest lookup for the per-partition error checks on every response.
const MIN_CODE = -1
const byCode: (KafkaErrorInfo | undefined)[] = []
const byName = new Map<string, KafkaErrorInfo>()
for (const info of KAFKA_ERRORS) {
  if (info.code >= MIN_CODE && info.code - MIN_CODE < 4096) byCode[info.code - MIN_CODE] = info
  byName.set(info.name, info)
}
const sparse = new Map<number, KafkaErrorInfo>()
for (const info of KAFKA_ERRORS) if (byCode[info.code - MIN_CODE] !== info) sparse.set(info.code, info)

/**
 * The table row for a code. A code this table does not know (a newer broker)
 * gets a synthesised `UNKNOWN` row that keeps the code and is not retriable:
 * nothing is retried unless Kafka says so. (Kafka's Java client maps such codes
 * to UNKNOWN_SERVER_ERROR and so loses the number.)
 */
export function errorByCode(code: number): KafkaErrorInfo {
  const info = byCode[code - MIN_CODE] ?? sparse.get(code)
  if (info !== undefined) return info
  return Object.freeze({
    code,
    name: 'UNKNOWN',
    retriable: false,
    message: `The server returned error code ${code}, which this client does not know.`,
  })
}

/** The table row for a Kafka error name, e.g. 'NOT_LEADER_OR_FOLLOWER'. */
export function errorByName(name: ErrorName): KafkaErrorInfo
export function errorByName(name: string): KafkaErrorInfo | undefined
export function errorByName(name: string): KafkaErrorInfo | undefined {
  return byName.get(name)
}

/** Whether Kafka classes this code as retriable (false for unknown codes). */
export function isRetriable(code: number): boolean {
  return (byCode[code - MIN_CODE] ?? sparse.get(code))?.retriable ?? false
}
