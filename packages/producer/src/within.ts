/** setTimeout's limit. */
const MAX_TIMER_MS = 0x7fffffff

/** Whether `p` settles within `ms` (its rejection is thrown); false when the time ran out first. */
export async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  if (ms <= 0) return false
  let timer: NodeJS.Timeout | undefined
  const settled = p.then(() => true)
  // A rejection after the time ran out is nobody's business any more.
  settled.catch(() => undefined)
  try {
    return await Promise.race([settled, new Promise<boolean>((resolve) => (timer = setTimeout(resolve, Math.min(ms, MAX_TIMER_MS), false)))])
  } finally {
    clearTimeout(timer)
  }
}
