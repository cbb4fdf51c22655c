import { mkdtempSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach } from 'vitest'

const dirs: string[] = []

/** A fresh temp directory (under `base`, the OS temp dir by default), removed after the test. */
export function tempDir(prefix = 'tidelog-broker-', base = tmpdir()): string {
  const d = mkdtempSync(join(base, prefix))
  dirs.push(d)
  return d
}

// A log a test leaves open (a simulated crash) may still finish a producer-state
// snapshot it began at a roll: those are written off the event loop, so a file can
// appear while the directory is being removed. Retry for a while instead of failing.
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 })
})
