import { defineConfig } from 'tsup'

// A command, not a library: ESM only, executable through the shebang.
export default defineConfig({
  entry: ['src/bin.ts'],
  format: ['esm'],
  sourcemap: true,
  clean: true,
  target: 'node20',
  platform: 'node',
  banner: { js: '#!/usr/bin/env node' },
})
