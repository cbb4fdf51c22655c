import type { InternalTopologyBuilder, NodeFactory } from './builder.js'
import { javaHashOrder, javaSetString } from './java-order.js'

/** One node of a TopologyDescription (Java's TopologyDescription.Node and its kinds). */
export interface DescribedNode {
  readonly kind: 'source' | 'processor' | 'sink'
  readonly name: string
  readonly predecessors: readonly DescribedNode[]
  readonly successors: readonly DescribedNode[]
  /** Source: its topics; processor: its stores; sink: its topic (when fixed). */
  readonly topics?: readonly string[]
  readonly stores?: readonly string[]
  readonly topic?: string
}

export interface Subtopology {
  readonly id: number
  readonly nodes: readonly DescribedNode[]
  /** A global store's sub-topology (GlobalKTable): it generates no tasks. */
  readonly global?: boolean
}

interface MutableNode {
  kind: NodeFactory['kind']
  name: string
  predecessors: MutableNode[]
  successors: MutableNode[]
  topics?: string[]
  stores?: string[]
  topic?: string
  hasExtractor: boolean
  /** Size of the sub-graph rooted here, the first sort key of Java's NodeComparator. */
  size: number
}

const compare = (a: MutableNode, b: MutableNode): number => {
  if (a.name === b.name) return 0
  if (a.size !== b.size) return b.size - a.size
  return a.name < b.name ? -1 : 1
}

/**
 * Java's TreeSet(NODE_COMPARATOR) is filled while sizes still change, so an element keeps the
 * place it got when inserted: reproduced by inserting in order, never re-sorting.
 */
function insertSorted(list: MutableNode[], n: MutableNode): void {
  if (list.some((x) => x.name === n.name)) return
  const at = list.findIndex((x) => compare(n, x) < 0)
  if (at < 0) list.push(n)
  else list.splice(at, 0, n)
}

function grow(n: MutableNode, delta: number): void {
  n.size += delta
  for (const p of n.predecessors) grow(p, delta)
}

export class TopologyDescription {
  readonly subtopologies: readonly Subtopology[]

  constructor(builder: InternalTopologyBuilder) {
    const subs: Subtopology[] = []
    for (const [id, names] of builder.nodeGroups()) {
      const byName = new Map<string, MutableNode>()
      // Java builds this map by iterating a HashSet of the group's names: same order here.
      for (const name of javaHashOrder(names)) {
        const f = builder.nodes.get(name)!
        byName.set(name, {
          kind: f.kind,
          name,
          predecessors: [],
          successors: [],
          size: 1,
          hasExtractor: f.kind === 'sink' && f.topic === undefined,
          ...(f.kind === 'source' ? { topics: javaHashOrder(f.topics) } : {}),
          ...(f.kind === 'processor' ? { stores: javaHashOrder(f.stores) } : {}),
          ...(f.kind === 'sink' && f.topic !== undefined ? { topic: f.topic } : {}),
        })
      }
      for (const node of byName.values()) {
        for (const p of builder.nodes.get(node.name)!.predecessors) {
          const pred = byName.get(p)!
          insertSorted(node.predecessors, pred)
          insertSorted(pred.successors, node)
          grow(pred, node.size)
        }
      }
      const nodes: MutableNode[] = []
      for (const n of byName.values()) insertSorted(nodes, n)
      subs.push({ id, nodes, ...(builder.isGlobalGroup(names) ? { global: true } : {}) })
    }
    this.subtopologies = subs
  }

  /** The text Java's TopologyDescription.toString() prints, character for character. */
  toString(): string {
    let out = 'Topologies:\n '
    for (const s of this.subtopologies) {
      // Java's GlobalStore.toString: its own header, and no blank line after it.
      if (s.global) {
        out += `  Sub-topology: ${s.id} for global store (will not generate tasks)\n`
        for (const n of s.nodes) out += `    ${nodeString(n as MutableNode)}\n`
        continue
      }
      out += `  Sub-topology: ${s.id}\n`
      for (const n of s.nodes) out += `    ${nodeString(n as MutableNode)}\n`
      out += '\n'
    }
    return out
  }
}

function names(nodes: readonly DescribedNode[]): string {
  return nodes.length === 0 ? 'none' : nodes.map((n) => n.name).join(', ')
}

function nodeString(n: MutableNode): string {
  switch (n.kind) {
    case 'source':
      return `Source: ${n.name} (topics: ${javaSetString(n.topics!)})\n      --> ${names(n.successors)}`
    case 'processor':
      return `Processor: ${n.name} (stores: ${javaSetString(n.stores!)})\n      --> ${names(n.successors)}\n      <-- ${names(n.predecessors)}`
    case 'sink':
      return n.hasExtractor
        ? `Sink: ${n.name} (extractor: TopicNameExtractor)\n      <-- ${names(n.predecessors)}`
        : `Sink: ${n.name} (topic: ${n.topic})\n      <-- ${names(n.predecessors)}`
  }
}
