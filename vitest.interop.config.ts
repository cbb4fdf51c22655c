import { defineConfig } from 'vitest/config'
import base from './vitest.config.js'

// Interop tests start real peers (Apache Kafka from Maven Central, kcat, Python
// clients), so they run on their own (`npm run test:interop`), one file at a time.
export default defineConfig({
  resolve: base.resolve,
  test: {
    include: ['test/interop/**/*.test.ts'],
    exclude: ['**/node_modules/**'],
    testTimeout: 180_000,
    hookTimeout: 240_000,
    fileParallelism: false,
    pool: 'forks',
  },
})
