import { Admin } from '@tidelog/client'
import type { OptionSpec, Parsed } from './args.js'
import { resolveConnection, type Connection } from './connection.js'
import { Progress } from './output/progress.js'

export interface Io {
  stdin: NodeJS.ReadableStream
  stdout: NodeJS.WritableStream & { isTTY?: boolean }
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number }
  env: NodeJS.ProcessEnv
  /** Aborted on SIGINT / SIGTERM: long commands finish what is in hand and exit. */
  signal: AbortSignal
}

export interface Command {
  /** 'topics list', 'produce', ... */
  name: string
  summary: string
  /** Positionals, e.g. 'TOPIC [FILE...]'. */
  usage: string
  options: OptionSpec[]
  run(ctx: Context): Promise<number | void>
}

export class Context {
  private conn: Connection | undefined
  private readonly closers: (() => Promise<void>)[] = []

  constructor(
    readonly command: Command,
    readonly args: Parsed,
    readonly io: Io,
    readonly commands: readonly Command[],
    /** Options every command takes (connection, --quiet, ...), for help and completion. */
    readonly globalOptions: readonly OptionSpec[],
  ) {}

  get quiet(): boolean {
    return this.args.flags.has('quiet')
  }

  get verbose(): boolean {
    return this.args.flags.has('verbose') && !this.quiet
  }

  get connection(): Connection {
    this.conn ??= resolveConnection(this.args, this.io.env)
    return this.conn
  }

  /** An Admin client on the resolved connection, closed when the command ends. */
  admin(): Admin {
    const c = this.connection
    if (this.verbose) for (const [k, from] of Object.entries(c.sources)) this.debug(`${k} from ${from}`)
    const admin = new Admin({ ...c.client, timeoutMs: c.timeoutMs })
    this.onClose(() => admin.close())
    return admin
  }

  onClose(fn: () => Promise<void>): void {
    this.closers.unshift(fn)
  }

  async close(): Promise<void> {
    for (const fn of this.closers.splice(0)) await fn().catch(() => undefined)
  }

  /** Writes to stdout, waiting when the pipe is full (a slow `| less` slows the command, memory stays flat). */
  write(chunk: string | Buffer): Promise<void> | undefined {
    if (this.io.stdout.write(chunk)) return undefined
    return new Promise((resolve) => this.io.stdout.once('drain', resolve))
  }

  /** A note for the person, on stderr; --quiet drops it. */
  info(line: string): void {
    if (!this.quiet) this.io.stderr.write(`${line}\n`)
  }

  debug(line: string): void {
    if (this.verbose) this.io.stderr.write(`tidelog: ${line}\n`)
  }

  progress(verb: string): Progress {
    return new Progress(this.io.stderr, verb, this.io.stderr.isTTY === true && !this.quiet)
  }
}
