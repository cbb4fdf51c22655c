import type { Logger } from '../logger.js'
import { silentLogger } from '../logger.js'
import { KafkaStorageError } from './errors.js'

/**
 * Whether a data directory may still be served. The first failed write or fsync
 * takes it offline for the rest of the process's life, as Kafka's
 * LogDirFailureChannel does: every log in it then refuses appends, reads and
 * flushes with KAFKA_STORAGE_ERROR, so nothing past the failure is ever
 * acknowledged, while the broker keeps answering everything else.
 */
export class LogDirState {
  private failure: KafkaStorageError | undefined

  constructor(
    readonly dataDir: string,
    private readonly logger: Logger = silentLogger,
  ) {}

  get offline(): boolean {
    return this.failure !== undefined
  }

  /** Takes the directory offline (once; later failures are only returned) and returns the error to throw. */
  fail(cause: unknown, what: string): KafkaStorageError {
    if (cause instanceof KafkaStorageError) return cause
    if (this.failure === undefined) {
      const reason = cause instanceof Error ? cause.message : String(cause)
      this.failure = new KafkaStorageError(`log directory ${this.dataDir} is offline: ${what} failed: ${reason}`, cause)
      this.logger.error(`${this.failure.message}; its partitions answer KAFKA_STORAGE_ERROR until the broker is restarted`)
    }
    return new KafkaStorageError(this.failure.message, cause)
  }

  /** Throws KAFKA_STORAGE_ERROR once the directory is offline. */
  check(): void {
    if (this.failure !== undefined) throw new KafkaStorageError(this.failure.message, this.failure.cause)
  }
}
