import { defineConfig } from 'tsup'

// Both builds write into dist/, so the build script empties it once up front
// rather than letting either config clean (they run concurrently).
export default defineConfig([
  {
    // The library entry, for startBroker() in-process (tests, embedding).
    entry: ['src/index.ts'],
    format: ['esm', 'cjs'],
    dts: true,
    sourcemap: true,
    target: 'node20',
    platform: 'node',
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
