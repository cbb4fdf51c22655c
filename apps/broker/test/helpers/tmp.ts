import { mkdtempSync, rmSync } from 'node:fs'
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

afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true, maxRetries: 5, retryDelay: 20 })
})
