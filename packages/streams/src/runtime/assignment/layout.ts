import type { InternalTopologyBuilder } from '../../internal/builder.js'

/** Sub-topologies with a logged store (Java's stateful tasks: the only ones given standby replicas). */
export function statefulSubtopologies(builder: InternalTopologyBuilder): Set<number> {
  const out = new Set<number>()
  for (const [id, names] of builder.nodeGroups()) {
    if (builder.isGlobalGroup(names)) continue
    const nodes = new Set(names)
    for (const entry of builder.stores.values()) {
      if (entry.builder.loggingEnabled && [...entry.processors].some((p) => nodes.has(p))) out.add(id)
    }
  }
  return out
}
