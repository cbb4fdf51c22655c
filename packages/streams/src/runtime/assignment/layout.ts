import type { InternalTopologyBuilder } from '../../internal/builder.js'

/**
 * Per sub-topology with logged stores (Java's stateful tasks: the only ones given standby and
 * warm-up replicas), their changelog topics (`<applicationId>-<store>-changelog`): the leader sums their end offsets into lags (KIP-441). */
export function changelogTopicsBySubtopology(builder: InternalTopologyBuilder, applicationId: string): Map<number, string[]> {
  const out = new Map<number, string[]>()
  for (const [id, names] of builder.nodeGroups()) {
    if (builder.isGlobalGroup(names)) continue
    const nodes = new Set(names)
    for (const [name, entry] of builder.stores) {
      if (entry.builder.loggingEnabled && [...entry.processors].some((p) => nodes.has(p))) out.set(id, [...(out.get(id) ?? []), `${applicationId}-${name}-changelog`])
    }
  }
  return out
}
