import { AdminError, ConnectionTimeoutError, KafkaConnectionError, RequestTimeoutError, SaslAuthenticationError } from '@tidelog/client'
import { RecordTooLargeError } from '@tidelog/producer'
import { ProtocolError, TidelogError } from '@tidelog/protocol'

/**
 * Exit codes, documented in the README. Usage errors use 2, as getopt-style tools and
 * tidelog-broker do, so scripts can tell "you typed it wrong" from "Kafka said no".
 */
export const ExitCode = {
  OK: 0,
  /** The broker refused or failed the operation (a Kafka error), or input could not be used. */
  FAILED: 1,
  /** Bad command line: unknown command or option, missing or malformed value. */
  USAGE: 2,
  /** No broker could be reached (connection refused, timeout, TLS or SASL failure). */
  UNREACHABLE: 3,
  /** Interrupted by SIGINT (128 + 2), as shells report it. */
  INTERRUPTED: 130,
} as const

/** A command line the CLI cannot run. */
export class UsageError extends Error {
  override readonly name = 'UsageError'
}

/** An operation failed for a reason the CLI explains itself (not a Kafka error code). */
export class CliError extends Error {
  override readonly name = 'CliError'
  constructor(
    message: string,
    readonly hint?: string,
    readonly exitCode: number = ExitCode.FAILED,
  ) {
    super(message)
  }
}

// What to do about the Kafka errors a person meets at a terminal; the rest print the broker's words.
const HINTS: Record<string, string> = {
  UNKNOWN_TOPIC_OR_PARTITION: "check the name with 'tidelog topics list'",
  TOPIC_ALREADY_EXISTS: 'pick another name, or pass --if-not-exists',
  INVALID_PARTITIONS: 'the partition count must be positive, and can only grow',
  INVALID_REPLICATION_FACTOR: 'the replication factor cannot exceed the number of brokers',
  INVALID_CONFIG: "see 'tidelog configs describe' for the valid keys",
  INVALID_TOPIC_EXCEPTION: 'topic names use [a-zA-Z0-9._-], at most 249 characters',
  GROUP_ID_NOT_FOUND: "check the name with 'tidelog groups list'",
  NON_EMPTY_GROUP: 'stop the group\'s consumers first',
  UNKNOWN_MEMBER_ID: 'the group has active members: stop its consumers first',
  TOPIC_AUTHORIZATION_FAILED: 'the principal lacks an ACL for this topic',
  GROUP_AUTHORIZATION_FAILED: 'the principal lacks an ACL for this group',
  CLUSTER_AUTHORIZATION_FAILED: 'the principal lacks a cluster ACL',
  SASL_AUTHENTICATION_FAILED: 'check --sasl-username / --sasl-password and --sasl-mechanism',
  UNSUPPORTED_SASL_MECHANISM: 'pass a --sasl-mechanism the broker enables',
  MESSAGE_TOO_LARGE: "the record exceeds the topic's max.message.bytes",
  RECORD_LIST_TOO_LARGE: 'send smaller records',
  POLICY_VIOLATION: "the broker's policy refused it",
}

function kafkaError(err: unknown): ProtocolError | undefined {
  if (err instanceof ProtocolError) return err
  if (err instanceof AdminError) return err.errors.find((e): e is ProtocolError => e instanceof ProtocolError)
  if (err instanceof Error && err.cause !== undefined && err.cause !== err) return kafkaError(err.cause)
  return undefined
}

function isUnreachable(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof KafkaConnectionError || e instanceof ConnectionTimeoutError || e instanceof SaslAuthenticationError) return true
    if (e instanceof RequestTimeoutError && e.apiName === 'Metadata') return true
    if (e.cause === e) break
  }
  return false
}

/** One line for stderr, and the exit code, for anything a command may throw. */
export function describeError(err: unknown, bootstrap: string): { line: string; exitCode: number } {
  if (err instanceof UsageError) return { line: `${err.message} (see 'tidelog --help')`, exitCode: ExitCode.USAGE }
  if (err instanceof CliError) return { line: err.hint === undefined ? err.message : `${err.message}: ${err.hint}`, exitCode: err.exitCode }
  const kafka = kafkaError(err)
  if (kafka !== undefined) {
    const what = kafka.topic ?? kafka.groupId
    const said = kafka.serverMessage === undefined ? '' : `: ${kafka.serverMessage.replace(/\.$/, '')}`
    const hint = HINTS[kafka.type]
    return { line: `${kafka.type}${what === undefined ? '' : ` (${what})`}${said}${hint === undefined ? '' : `; ${hint}`}`, exitCode: ExitCode.FAILED }
  }
  if (err instanceof SaslAuthenticationError) return { line: `SASL_AUTHENTICATION_FAILED: ${err.message}; ${HINTS.SASL_AUTHENTICATION_FAILED}`, exitCode: ExitCode.UNREACHABLE }
  if (isUnreachable(err)) {
    const detail = err instanceof Error ? err.message.split('\n')[0] : String(err)
    return {
      line: `cannot reach a broker at ${bootstrap} (${detail}); is it running? Pass --bootstrap-server host:port or set TIDELOG_BOOTSTRAP_SERVER`,
      exitCode: ExitCode.UNREACHABLE,
    }
  }
  if (err instanceof RecordTooLargeError) {
    return { line: `${err.name}: ${err.message}; pass --max-request-size (the topic's max.message.bytes must allow it too)`, exitCode: ExitCode.FAILED }
  }
  if (err instanceof TidelogError || err instanceof TypeError || err instanceof RangeError) {
    return { line: `${err.name}: ${err.message.split('\n')[0]}`, exitCode: ExitCode.FAILED }
  }
  const e = err instanceof Error ? err : new Error(String(err))
  return { line: `${e.name}: ${e.message.split('\n')[0]}`, exitCode: ExitCode.FAILED }
}
