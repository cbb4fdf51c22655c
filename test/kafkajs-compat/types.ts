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
