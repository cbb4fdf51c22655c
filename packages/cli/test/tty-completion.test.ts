/**
 * What only a terminal shows: the progress line (a real pseudo-terminal through util-linux
 * `script`), and shell completion run by bash itself (and zsh, where installed).
 */
import { execFile, spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BIN, testBroker, type TestBroker } from './helpers.js'

const run = promisify(execFile)
const hasZsh = spawnSync('zsh', ['--version']).status === 0
let b: TestBroker
let shimDir: string

beforeAll(async () => {
  b = await testBroker()
  // `tidelog` on PATH, as an installed package puts it, for the completion scripts to call.
  shimDir = join(b.dataDir, 'bin')
  mkdirSync(shimDir)
  writeFileSync(join(shimDir, 'tidelog'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`)
  chmodSync(join(shimDir, 'tidelog'), 0o755)
  expect((await b.run(['topics', 'create', 'tty-topic', '--partitions', '2'])).code).toBe(0)
})

afterAll(async () => {
  await b?.close()
})

/** Runs a shell command line in a fresh pseudo-terminal; resolves with everything the terminal showed. */
async function inPty(command: string): Promise<string> {
  const { stdout } = await run('script', ['-q', '-e', '-f', '-c', `stty cols 200; ${command}`, '/dev/null'], { env: { ...process.env, PATH: `${shimDir}:${process.env.PATH}`, COLUMNS: '200' }, timeout: 60_000 })
  return stdout
}

describe.concurrent('on a terminal', () => {
  it('bulk produce and consume draw a live progress line on stderr; --quiet and pipes keep quiet', async () => {
    const file = join(b.dataDir, 'many.txt')
    writeFileSync(file, Array.from({ length: 20_000 }, (_, i) => `value-${i}`).join('\n'))
    const shown = await inPty(`tidelog produce tty-topic -b ${b.bootstrap} < ${file}`)
    expect(shown).toContain('\r\x1b[K')
    expect(shown).toMatch(/produced 20000 records, 0\.\d\d MB in [\d.]+ s: [\d.]+ records\/s, [\d.]+ MB\/s/)

    const read = await inPty(`tidelog consume tty-topic -b ${b.bootstrap} --from-beginning -e > /dev/null`)
    expect(read).toMatch(/consumed 20000 records, 0\.\d\d MB in [\d.]+ s: [\d.]+ records\/s, [\d.]+ MB\/s/)

    const quiet = await inPty(`tidelog consume tty-topic -b ${b.bootstrap} --from-beginning -e -q > /dev/null`)
    expect(quiet).not.toContain('records/s')
    const piped = await inPty(`tidelog consume tty-topic -b ${b.bootstrap} --from-beginning -e 2>&1 | tail -n 1`)
    expect(piped).not.toContain('records/s')
    expect(piped.trim()).toMatch(/^value-\d+$/)
  })

  it('bash completion offers commands, subcommands, options and the cluster\'s topic names', async () => {
    const complete = async (words: string[]) => {
      const script = `source <(tidelog completion bash); COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _tidelog; printf '%s\\n' "\${COMPREPLY[@]}"`
      const { stdout } = await run('bash', ['-c', script], { env: { ...process.env, PATH: `${shimDir}:${process.env.PATH}` } })
      return stdout.split('\n').filter((l) => l !== '')
    }
    expect(await complete(['tidelog', 'gr'])).toEqual(['groups'])
    expect(await complete(['tidelog', 'groups', ''])).toEqual(['list', 'describe', 'reset-offsets', 'delete'])
    expect(await complete(['tidelog', 'groups', 'reset-offsets', '--to-e'])).toEqual(['--to-earliest'])
    expect(await complete(['tidelog', 'consume', '--bootstrap-s'])).toEqual(['--bootstrap-server'])
    expect(await complete(['tidelog', 'consume', '-b', b.bootstrap, 'tty'])).toEqual(['tty-topic'])
  })

  // zsh is not on every machine (Debian: apt-get install zsh); the skip shows in the report.
  it.skipIf(!hasZsh)('zsh loads the completion script and registers it for tidelog (skips where zsh is not installed)', async () => {
    const { stdout } = await run('zsh', ['-f', '-c', 'autoload -U compinit && compinit -u -D && eval "$(tidelog completion zsh)" && print -r -- ${_comps[tidelog]}'], { env: { ...process.env, PATH: `${shimDir}:${process.env.PATH}` } })
    expect(stdout.trim()).toBe('_tidelog')
  })
})
