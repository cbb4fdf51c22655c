import { readFileSync } from 'node:fs'
import { expect, it } from 'vitest'
import { readmePath, readmeWithTable } from '../scripts/readme-api-table.js'
import { missingTests, readmeWithCompatTable } from '../scripts/compat-matrix.js'

it('the README API table matches the codec and broker registries (npx tsx scripts/readme-api-table.ts --write)', () => {
  const readme = readFileSync(readmePath, 'utf8')
  expect(readmeWithTable(readme)).toBe(readme)
})

it('the README compatibility table matches scripts/compat-matrix.ts, and every row names tests that exist', () => {
  expect(missingTests()).toEqual([])
  const readme = readFileSync(readmePath, 'utf8')
  expect(readmeWithCompatTable(readme)).toBe(readme)
})
