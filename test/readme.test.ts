import { readFileSync } from 'node:fs'
import { expect, it } from 'vitest'
import { readmePath, readmeWithTable } from '../scripts/readme-api-table.js'

it('the README API table matches the codec and broker registries (npx tsx scripts/readme-api-table.ts --write)', () => {
  const readme = readFileSync(readmePath, 'utf8')
  expect(readmeWithTable(readme)).toBe(readme)
})
