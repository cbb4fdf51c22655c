import { cpSync } from 'node:fs'
import { defineConfig } from 'tsup'

// Both builds write into dist/, so the build script empties it once up front
// rather than letting either config clean (they run concurrently).
export default defineConfig([
  {
    // The library entry, for startBroker() in-process (tests, embedding).
    // The log cleaner's worker thread is its own file beside the bundles (worker-client.ts finds it there).
    entry: { index: 'src/index.ts', 'cleaner-worker': 'src/log/compaction/cleaner-worker.ts' },
    format: ['esm', 'cjs'],
    dts: true,
    sourcemap: true,
    target: 'node20',
    platform: 'node',
    // The console finds its static files from import.meta.url, which the CJS build must shim.
    shims: true,
    // The console's pages ship as files beside the bundles (dist/console), not inlined.
    onSuccess: async () => {
      cpSync('src/console/static', 'dist/console', { recursive: true })
    },
  },
  {
    // The CLI: ESM only, executable through the shebang.
    entry: ['src/main.ts'],
    format: ['esm'],
    sourcemap: true,
    target: 'node20',
    platform: 'node',
    banner: { js: '#!/usr/bin/env node' },
  },
])
