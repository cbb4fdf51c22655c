import { JSON_FLAG } from '../args.js'
import type { Command } from '../context.js'
import { table, toJson } from '../output/table.js'

const cluster: Command = {
  name: 'cluster',
  summary: 'cluster id, controller and brokers',
  usage: '',
  options: [JSON_FLAG],
  async run(ctx) {
    const c = await ctx.admin().describeCluster()
    if (ctx.args.flags.has('json')) return void (await ctx.write(toJson(c) + '\n'))
    await ctx.write(`Cluster ID: ${c.clusterId ?? '-'}\nController: ${c.controllerId < 0 ? '-' : c.controllerId}\n\n`)
    await ctx.write(table(['ID', 'HOST', 'PORT', 'RACK'], c.brokers.map((b) => [b.nodeId, b.host, b.port, b.rack ?? '-'])))
  },
}

export const clusterCommands: Command[] = [cluster]
