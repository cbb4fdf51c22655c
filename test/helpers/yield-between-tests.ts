/**
 * Gives the event loop a macrotask turn before every test. vitest's worker answers its
 * main process over an RPC with a 60 s timeout, and a file of synchronous tests (the
 * message fuzzers: 50-odd decoders, 71 s at load) runs as one event-loop turn, so the
 * reply waits behind them and the worker reports "Timeout calling onTaskUpdate", an
 * unhandled error that fails npm test although every test passed.
 */
import { beforeEach } from 'vitest'

beforeEach(() => new Promise<void>((resolve) => setImmediate(resolve)))
