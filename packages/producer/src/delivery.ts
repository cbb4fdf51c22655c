import { performance } from 'node:perf_hooks'
import { SendError } from './errors.js'
import { snapshot, type ProducerRecord, type RecordMetadata } from './record.js'

/**
 * One send() call: its records, how far they have been queued, and the single promise the
 * caller holds. Batches point back here with a slot per record, so a send of many records
 * costs one promise, not one per record.
 */
export class Delivery {
  records: readonly ProducerRecord[]
  /** The records from `next` on are snapshot() copies, taken when send() had to leave them waiting. */
  copied = false
  readonly single: boolean
  readonly promise: Promise<RecordMetadata | RecordMetadata[]>
  /**
   * performance.now() at send(): deliveryTimeoutMs counts from here for every record of the
   * call, through waiting for metadata or room and in the buffer, as its batch's creation time.
   */
  readonly createdAt = performance.now()
  /** The next record to queue. */
  next = 0
  /** Topics that failed metadata lookup in this call, so later records of it fail at once. */
  topicErrors: Map<string, Error> | undefined
  private remaining: number
  private failures = 0
  private results: (RecordMetadata | undefined)[] | undefined
  private errors: (Error | undefined)[] | undefined
  private resolve!: (v: RecordMetadata | RecordMetadata[]) => void
  private reject!: (e: Error) => void

  constructor(records: readonly ProducerRecord[], single: boolean) {
    this.records = records
    this.single = single
    this.remaining = records.length
    this.promise = new Promise((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
  }

  /**
   * Copies the records not queued yet, so that they are sent as they were at send() (Java
   * serializes in send(); ours returns before these are queued). Their default timestamp is
   * `wallClock`, the send() time.
   */
  defer(wallClock: number): void {
    if (this.copied) return
    this.copied = true
    const n = this.records.length
    const own = this.records.slice()
    for (let i = this.next; i < n; i++) own[i] = snapshot(own[i]!, wallClock)
    this.records = own
  }

  get settled(): boolean {
    return this.remaining === 0
  }

  complete(slot: number, meta: RecordMetadata): void {
    if (this.single) {
      this.remaining = 0
      this.resolve(meta)
      return
    }
    ;(this.results ??= new Array(this.records.length))[slot] = meta
    if (--this.remaining === 0) this.finish()
  }

  fail(slot: number, error: Error): void {
    if (this.single) {
      this.remaining = 0
      this.reject(error)
      return
    }
    ;(this.errors ??= new Array(this.records.length))[slot] = error
    this.failures++
    if (--this.remaining === 0) this.finish()
  }

  /** Fails every record not yet queued. */
  failRest(error: Error): void {
    const n = this.records.length
    while (this.next < n && this.remaining > 0) this.fail(this.next++, error)
    this.next = n
  }

  private finish(): void {
    if (this.failures === 0) {
      this.resolve(this.results as RecordMetadata[])
      return
    }
    const errors = this.errors!
    const results = this.results ?? new Array<RecordMetadata | undefined>(this.records.length)
    // Arrays made with `new Array(n)` have holes; fill them so `errors[i] === undefined` reads plainly.
    for (let i = 0; i < errors.length; i++) {
      if (errors[i] === undefined) errors[i] = undefined
      if (results[i] === undefined) results[i] = undefined
    }
    this.reject(new SendError(errors, results, this.failures))
  }
}
