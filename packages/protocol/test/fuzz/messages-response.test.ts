import { afterAll, describe } from 'vitest'
import { watchdog } from './harness.js'
import { defineMessageFuzz } from './messages.js'

afterAll(() => watchdog.stop())

// Requests and responses live in two files so that the test runner spreads them over two workers.
describe('fuzz: every API response decoder, every version', () => defineMessageFuzz('Response'))
