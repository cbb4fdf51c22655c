import type { ScramMechanism, UserScramCredentialsDescription } from '@tidelog/client'
import { JSON_FLAG } from '../args.js'
import type { Command, Context } from '../context.js'
import { UsageError } from '../errors.js'
import { table, toJson } from '../output/table.js'

const MECHANISMS: readonly ScramMechanism[] = ['SCRAM-SHA-256', 'SCRAM-SHA-512']

function mechanisms(ctx: Context): ScramMechanism[] {
  const list = ctx.args.lists.get('mechanism') ?? []
  if (list.length === 0) throw new UsageError(`--mechanism is needed: ${MECHANISMS.join(' or ')}`)
  return list.map((m) => {
    const found = MECHANISMS.find((x) => x === m.toUpperCase())
    if (found === undefined) throw new UsageError(`--mechanism ${JSON.stringify(m)} is not one of ${MECHANISMS.join(', ')}`)
    return found
  })
}

function user(ctx: Context): string {
  const u = ctx.args.values.get('user')
  if (u === undefined || u === '') throw new UsageError('--user NAME is needed')
  return u
}

function print(ctx: Context, users: readonly UserScramCredentialsDescription[]): Promise<void> | undefined {
  const sorted = [...users].sort((a, b) => a.name.localeCompare(b.name))
  if (ctx.args.flags.has('json')) return ctx.write(toJson(sorted) + '\n')
  return ctx.write(table(['USER', 'MECHANISM', 'ITERATIONS'], sorted.flatMap((u) => u.credentialInfos.map((c) => [u.name, c.mechanism, String(c.iterations)]))))
}

const list: Command = {
  name: 'users list',
  summary: 'SCRAM users and their mechanisms and iterations (as kafka-configs.sh --describe --entity-type users)',
  usage: '',
  options: [{ name: 'user', kind: 'list', arg: 'NAME', help: 'only this user (repeatable); an unknown one is an error' }, JSON_FLAG],
  async run(ctx) {
    const only = ctx.args.lists.get('user')
    await print(ctx, await ctx.admin().describeUserScramCredentials(only))
  },
}

const set: Command = {
  name: 'users set',
  summary: 'create or change a SCRAM credential; the password is salted here and never sent (KIP-554)',
  usage: '',
  options: [
    { name: 'user', kind: 'value', arg: 'NAME', help: 'the user' },
    { name: 'mechanism', kind: 'list', arg: 'MECHANISM', help: 'SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable)' },
    { name: 'password', kind: 'value', arg: 'PASSWORD', help: 'the password (kafka-configs.sh takes it the same way)' },
    { name: 'iterations', kind: 'value', arg: 'N', help: 'PBKDF2 iterations, 4096 (default) to 16384' },
  ],
  async run(ctx) {
    const name = user(ctx)
    const password = ctx.args.values.get('password')
    if (password === undefined) throw new UsageError('--password is needed')
    const raw = ctx.args.values.get('iterations') ?? '4096'
    if (!/^\d+$/.test(raw)) throw new UsageError(`--iterations takes a whole number, got ${JSON.stringify(raw)}`)
    const iterations = Number(raw)
    await ctx.admin().alterUserScramCredentials(mechanisms(ctx).map((mechanism) => ({ user: name, credentialInfo: { mechanism, iterations }, password })))
    ctx.info(`Set ${name}'s ${mechanisms(ctx).join(', ')} credential.`)
  },
}

const del: Command = {
  name: 'users delete',
  summary: 'remove SCRAM credentials of a user',
  usage: '',
  options: [
    { name: 'user', kind: 'value', arg: 'NAME', help: 'the user' },
    { name: 'mechanism', kind: 'list', arg: 'MECHANISM', help: 'SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable)' },
  ],
  async run(ctx) {
    const name = user(ctx)
    await ctx.admin().alterUserScramCredentials(mechanisms(ctx).map((mechanism) => ({ user: name, mechanism })))
    ctx.info(`Removed ${name}'s ${mechanisms(ctx).join(', ')} credential.`)
  },
}

export const userCommands: Command[] = [list, set, del]
