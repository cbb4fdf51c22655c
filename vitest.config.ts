import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

const src = (p: string) => fileURLToPath(new URL(p, import.meta.url))

// Packages resolve to their sources so tests never need a build; the build and
// the packed output are checked separately (npm test runs both).
export default defineConfig({
  resolve: {
    alias: {
      '@tidelog/protocol': src('./packages/protocol/src/index.ts'),
      '@tidelog/broker': src('./apps/broker/src/index.ts'),
      '@tidelog/client': src('./packages/client/src/index.ts'),
      '@tidelog/consumer': src('./packages/consumer/src/index.ts'),
      '@tidelog/producer': src('./packages/producer/src/index.ts'),
      '@tidelog/kafkajs': src('./packages/kafkajs/src/index.ts'),
      '@tidelog/streams': src('./packages/streams/src/index.ts'),
    },
  },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'apps/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**', 'test/interop/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    setupFiles: ['./test/helpers/yield-between-tests.ts'],
    pool: 'forks',
    // Vitest's default is one worker fewer than the CPUs: one at a time on CI's 2 cores, where
    // most files spend their time waiting on sockets and timers. Two at once cut npm test's time.
    maxWorkers: 2,
    minWorkers: 1,
  },
})
