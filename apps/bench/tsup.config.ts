import { defineConfig } from 'tsup'

// The benchmark imports @tidelog/protocol from its built dist (as users get it), so
// it is never bundled in here.
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm'],
  dts: false,
  sourcemap: true,
  clean: true,
  target: 'node20',
  platform: 'node',
  external: [/^@tidelog\//, 'kafkajs', 'murmurhash', 'snappyjs'],
})
