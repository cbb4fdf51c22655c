import pkg from '../package.json' with { type: 'json' }
import { parseArgs, type OptionSpec } from './args.js'
import { aclCommands } from './commands/acls.js'
import { clusterCommands } from './commands/cluster.js'
import { completionCommands } from './commands/completion.js'
import { configCommands } from './commands/configs.js'
import { consumeCommands } from './commands/consume.js'
import { groupCommands } from './commands/groups.js'
import { perfCommands } from './commands/perf.js'
import { produceCommands } from './commands/produce.js'
import { topicCommands } from './commands/topics.js'
import { userCommands } from './commands/users.js'
import { CONNECTION_OPTIONS, DEFAULT_BOOTSTRAP } from './connection.js'
import { Context, type Command, type Io } from './context.js'
import { describeError, ExitCode, UsageError } from './errors.js'

// Bundled into dist by tsup, so --version follows the release (changesets bump package.json).
export const VERSION: string = pkg.version

export const GLOBAL_OPTIONS: OptionSpec[] = [
  ...CONNECTION_OPTIONS,
  { name: 'quiet', short: 'q', kind: 'flag', help: 'no progress line or notes on stderr' },
  { name: 'verbose', short: 'v', kind: 'flag', help: 'say where settings came from and what was done' },
  { name: 'help', short: 'h', kind: 'flag', help: 'show help' },
]

export const COMMANDS: Command[] = [
  ...topicCommands,
  ...produceCommands,
  ...consumeCommands,
  ...groupCommands,
  ...clusterCommands,
  ...configCommands,
  ...aclCommands,
  ...userCommands,
  ...perfCommands,
  ...completionCommands,
]

function optionsHelp(specs: readonly OptionSpec[]): string {
  const rows = specs.map((s) => [`${s.short === undefined ? '    ' : `-${s.short}, `}--${s.name}${s.kind === 'flag' ? '' : ` ${s.arg ?? 'VALUE'}`}`, s.help])
  const w = Math.max(...rows.map((r) => r[0]!.length))
  return rows.map(([a, b]) => `  ${a!.padEnd(w)}  ${b}`).join('\n')
}

export function mainHelp(): string {
  const w = Math.max(...COMMANDS.map((c) => c.name.length))
  return [
    'Usage: tidelog COMMAND [OPTIONS]',
    '',
    'A command line for Apache Kafka (and the tidelog broker).',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(w)}  ${c.summary}`),
    '',
    'Options for every command:',
    optionsHelp(GLOBAL_OPTIONS),
    '',
    `Settings come from the flags, then TIDELOG_* variables (TIDELOG_BOOTSTRAP_SERVER, ...), then the`,
    `profile in $XDG_CONFIG_HOME/tidelog/config.json; the default broker is ${DEFAULT_BOOTSTRAP}.`,
    'Exit codes: 0 ok, 1 the operation failed, 2 bad command line, 3 no broker reachable, 130 a second Ctrl-C.',
    "Run 'tidelog COMMAND --help' for a command's options.",
    '',
  ].join('\n')
}

function commandHelp(c: Command): string {
  return [`Usage: tidelog ${c.name}${c.usage === '' ? '' : ` ${c.usage}`} [OPTIONS]`, '', `${c.summary[0]!.toUpperCase()}${c.summary.slice(1)}.`, '', 'Options:', optionsHelp(c.options), '', 'Connection and output:', optionsHelp(GLOBAL_OPTIONS), ''].join('\n')
}

/** The command named by the first one or two words of argv (global options may come first). */
function findCommand(argv: readonly string[]): { command?: Command; rest: string[]; words: string[] } {
  const byName = new Map(GLOBAL_OPTIONS.map((o) => [o.name, o]))
  const byShort = new Map(GLOBAL_OPTIONS.filter((o) => o.short !== undefined).map((o) => [o.short!, o]))
  const before: string[] = []
  let i = 0
  for (; i < argv.length; i++) {
    const a = argv[i]!
    if (!a.startsWith('-') || a === '-') break
    before.push(a)
    const spec = a.startsWith('--') ? byName.get(a.slice(2).split('=')[0]!) : a.length === 2 ? byShort.get(a[1]!) : undefined
    if (spec !== undefined && spec.kind !== 'flag' && !a.includes('=') && i + 1 < argv.length) before.push(argv[++i]!)
  }
  const words = argv.slice(i, i + 2)
  for (const n of [2, 1]) {
    const name = words.slice(0, n).join(' ')
    const command = COMMANDS.find((c) => c.name === name)
    if (command !== undefined) return { command, rest: [...before, ...argv.slice(i + n)], words }
  }
  return { rest: [...before, ...argv.slice(i)], words }
}

/** Runs one command line; resolves with the exit code. Never throws. */
export async function run(argv: readonly string[], io: Io): Promise<number> {
  let bootstrap = io.env.TIDELOG_BOOTSTRAP_SERVER || DEFAULT_BOOTSTRAP
  let ctx: Context | undefined
  try {
    if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
      io.stdout.write(mainHelp())
      return argv.length === 0 ? ExitCode.USAGE : ExitCode.OK
    }
    if (argv[0] === '--version' || argv[0] === 'version') {
      io.stdout.write(`tidelog ${VERSION}\n`)
      return ExitCode.OK
    }
    const { command, rest, words } = findCommand(argv)
    if (command === undefined) {
      const group = COMMANDS.filter((c) => c.name.startsWith(`${words[0]} `))
      if (group.length > 0) {
        throw new UsageError(words[1] === undefined ? `${words[0]} needs a subcommand: ${group.map((c) => c.name.split(' ')[1]).join(', ')}` : `unknown subcommand ${words[0]} ${words[1]} (one of: ${group.map((c) => c.name.split(' ')[1]).join(', ')})`)
      }
      throw new UsageError(words[0] === undefined ? 'no command given' : `unknown command ${JSON.stringify(words[0])}`)
    }
    const parsed = parseArgs(rest, [...GLOBAL_OPTIONS, ...command.options])
    if (parsed.flags.has('help')) {
      io.stdout.write(commandHelp(command))
      return ExitCode.OK
    }
    ctx = new Context(command, parsed, io, COMMANDS, GLOBAL_OPTIONS)
    bootstrap = parsed.values.get('bootstrap-server') ?? bootstrap
    bootstrap = ctx.connection.bootstrap
    const code = await command.run(ctx)
    return code ?? ExitCode.OK
  } catch (err) {
    if (io.signal.aborted && ctx !== undefined) return ExitCode.INTERRUPTED
    const { line, exitCode } = describeError(err, bootstrap)
    io.stderr.write(`tidelog: ${line}\n`)
    if (ctx?.verbose === true && err instanceof Error && err.stack !== undefined) io.stderr.write(`${err.stack}\n`)
    return exitCode
  } finally {
    await ctx?.close()
  }
}
