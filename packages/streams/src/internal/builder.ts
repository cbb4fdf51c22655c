import type { Serde } from '@tidelog/client'
import { TopologyException } from '../errors.js'
import type { ProcessorSupplier, StreamPartitioner, TimestampExtractor, TopicNameExtractor } from '../processor.js'
import type { StoreBuilder } from '../store.js'

export interface SourceNode {
  kind: 'source'
  name: string
  topics: string[]
  predecessors: string[]
  keySerde?: Serde<unknown>
  valueSerde?: Serde<unknown>
  timestampExtractor?: TimestampExtractor
}

export interface ProcessorNode {
  kind: 'processor'
  name: string
  supplier: ProcessorSupplier<any, any, any, any>
  predecessors: string[]
  /** In the order they were connected (Java's HashSet then decides the printed order). */
  stores: string[]
}

export interface SinkNode {
  kind: 'sink'
  name: string
  /** A fixed topic, or undefined when `extractor` picks one per record. */
  topic?: string
  extractor?: TopicNameExtractor<any, any>
  predecessors: string[]
  keySerde?: Serde<unknown>
  valueSerde?: Serde<unknown>
  partitioner?: StreamPartitioner<any, any>
}

export type NodeFactory = SourceNode | ProcessorNode | SinkNode

/** A topic the application creates and owns: its real name is `<applicationId>-<name>`. */
export interface InternalTopic {
  name: string
  kind: 'repartition'
  numberOfPartitions?: number
}

export interface StoreEntry {
  builder: StoreBuilder
  processors: Set<string>
}

/**
 * The topology as a graph of named node factories (Java's InternalTopologyBuilder): the
 * Processor API and the DSL both write here; tasks instantiate it; describe() reads it.
 */
export class InternalTopologyBuilder {
  /** Insertion-ordered, as Java's LinkedHashMap: sub-topology ids follow it. */
  readonly nodes = new Map<string, NodeFactory>()
  readonly stores = new Map<string, StoreEntry>()
  readonly internalTopics = new Map<string, InternalTopic>()
  private readonly topicToSource = new Map<string, string>()
  /** Source topics that must have the same partition count (Java's copartitionSourceGroups): each join adds one. */
  readonly copartitionGroups: string[][] = []
  /** Topics read by global tables: their sub-topology is a global task, not partitioned tasks. */
  readonly globalTopics = new Set<string>()

  /** Whether a sub-topology is a global store's (Java's "for global store (will not generate tasks)"). */
  isGlobalGroup(names: readonly string[]): boolean {
    return names.some((n) => {
      const f = this.nodes.get(n)
      return f?.kind === 'source' && f.topics.some((t) => this.globalTopics.has(t))
    })
  }

  addSource(node: Omit<SourceNode, 'kind' | 'predecessors'>): void {
    this.checkName(node.name)
    if (node.topics.length === 0) throw new TopologyException('You must provide at least one topic')
    for (const t of node.topics) {
      const other = this.topicToSource.get(t)
      if (other !== undefined) throw new TopologyException(`Topic ${t} has already been registered by another source.`)
    }
    for (const t of node.topics) this.topicToSource.set(t, node.name)
    this.nodes.set(node.name, { ...node, kind: 'source', topics: [...node.topics], predecessors: [] })
  }

  addProcessor(name: string, supplier: ProcessorSupplier<any, any, any, any>, parents: readonly string[]): void {
    this.checkName(name)
    this.checkParents(name, parents)
    this.nodes.set(name, { kind: 'processor', name, supplier, predecessors: [...parents], stores: [] })
  }

  addSink(node: Omit<SinkNode, 'kind' | 'predecessors'>, parents: readonly string[]): void {
    this.checkName(node.name)
    this.checkParents(node.name, parents)
    if (node.topic === undefined && node.extractor === undefined) throw new TopologyException(`sink ${node.name} needs a topic or a TopicNameExtractor`)
    this.nodes.set(node.name, { ...node, kind: 'sink', predecessors: [...parents] })
  }

  addStateStore(builder: StoreBuilder, processorNames: readonly string[]): void {
    if (this.stores.has(builder.name)) throw new TopologyException(`A different StateStore has already been added with the name ${builder.name}`)
    this.stores.set(builder.name, { builder, processors: new Set() })
    for (const p of processorNames) this.connect(p, builder.name)
  }

  connect(processorName: string, storeName: string): void {
    const node = this.nodes.get(processorName)
    if (node === undefined) throw new TopologyException(`Processor ${processorName} is not added yet.`)
    if (node.kind !== 'processor') throw new TopologyException(`cannot connect a store to ${processorName}: only processors have stores`)
    const store = this.stores.get(storeName)
    if (store === undefined) throw new TopologyException(`StateStore ${storeName} is not added yet.`)
    if (!node.stores.includes(storeName)) node.stores.push(storeName)
    store.processors.add(processorName)
  }

  addInternalTopic(topic: InternalTopic): void {
    this.internalTopics.set(topic.name, topic)
  }

  /** The topic as the application sees it on the broker: internal ones get `<applicationId>-` in front. */
  decorate(topic: string, applicationId: string): string {
    return this.internalTopics.has(topic) ? `${applicationId}-${topic}` : topic
  }

  sourceForTopic(topic: string): string | undefined {
    return this.topicToSource.get(topic)
  }

  /** Sub-topologies: nodes connected by edges or by a shared store, numbered in node insertion order (Java's makeNodeGroups). */
  nodeGroups(): Map<number, string[]> {
    const parent = new Map<string, string>()
    const root = (n: string): string => {
      let r = n
      while (parent.get(r) !== r) r = parent.get(r)!
      parent.set(n, r)
      return r
    }
    const unite = (a: string, b: string) => parent.set(root(a), root(b))
    for (const n of this.nodes.keys()) parent.set(n, n)
    for (const node of this.nodes.values()) for (const p of node.predecessors) unite(node.name, p)
    for (const s of this.stores.values()) {
      const [first, ...rest] = [...s.processors]
      for (const p of rest) unite(first!, p)
    }
    const groups = new Map<number, string[]>()
    const byRoot = new Map<string, string[]>()
    for (const n of this.nodes.keys()) {
      const r = root(n)
      let g = byRoot.get(r)
      if (g === undefined) {
        g = []
        byRoot.set(r, g)
        groups.set(groups.size, g)
      }
      g.push(n)
    }
    return groups
  }

  children(name: string): string[] {
    const out: string[] = []
    for (const node of this.nodes.values()) if (node.predecessors.includes(name)) out.push(node.name)
    return out
  }

  private checkName(name: string): void {
    if (!name) throw new TopologyException('node name cannot be empty')
    if (this.nodes.has(name)) throw new TopologyException(`Processor ${name} is already added.`)
  }

  private checkParents(name: string, parents: readonly string[]): void {
    if (parents.length === 0) throw new TopologyException(`Processor ${name} must have at least one parent`)
    for (const p of parents) {
      if (p === name) throw new TopologyException(`Processor ${name} cannot be a predecessor of itself.`)
      const node = this.nodes.get(p)
      if (node === undefined) throw new TopologyException(`Parent processor ${p} is not added yet for ${name}`)
      if (node.kind === 'sink') throw new TopologyException(`Sink ${p} cannot be used a parent.`)
    }
  }
}
