// The programs here are written from kafkajs 2.2's documentation and take the library as an
// argument: real kafkajs and @tidelog/kafkajs run the very same code, only the import differs.
export type KafkaModule = typeof import('kafkajs')

/** Waits for a condition without fixed sleeps (the machine may be loaded). */
export async function until(cond: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/**
 * Retries an admin call on a retriable error, as programs against a cluster that just started
 * do: kafkajs 2.2.4 surfaces NOT_COORDINATOR (offsets topic being created) and
 * UNKNOWN_TOPIC_OR_PARTITION (new topic not yet in the metadata) instead of retrying them.
 */
export async function retrying<T>(fn: () => Promise<T>, attempts = 50): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn()
    } catch (e) {
      if (i >= attempts || (e as { retriable?: boolean }).retriable !== true) throw e
      await new Promise((r) => setTimeout(r, 200))
    }
  }
}
