import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { randomUuid } from '@tidelog/protocol'
import type { BrokerConfig } from './config.js'
import { writeFileAtomicSync } from './log/checkpoint.js'
import type { LogManager, PartitionLog } from './log/index.js'
import type { Logger } from './logger.js'
import { type TopicSettings, topicSettings } from './topic-config.js'

export const TOPICS_FILE = 'topics.json'

export interface Topic {
  readonly name: string
  /** Kafka's printed uuid form (KIP-516). */
  readonly topicId: string
  readonly isInternal: boolean
  /** Topic-level config overrides, by Kafka name. */
  configs: Record<string, string>
  settings: TopicSettings
  /** The partitions' logs, by index. */
  logs: PartitionLog[]
}

interface StoredTopic {
  name: string
  topicId: string
  partitions: number
  configs: Record<string, string>
}

// Kafka's rules (org.apache.kafka.common.internals.Topic): at most 249 characters of
// [a-zA-Z0-9._-], and not "." or "..".
const LEGAL = /^[a-zA-Z0-9._-]+$/
export const MAX_TOPIC_NAME_LENGTH = 249

/** Why `name` is not a legal topic name, or undefined if it is. */
export function invalidTopicName(name: string): string | undefined {
  if (name.length === 0) return 'topic name is empty'
  if (name === '.' || name === '..') return `topic name cannot be "${name}"`
  if (name.length > MAX_TOPIC_NAME_LENGTH) return `topic name is longer than ${MAX_TOPIC_NAME_LENGTH} characters`
  if (!LEGAL.test(name)) return `topic name ${JSON.stringify(name)} contains characters other than ASCII alphanumerics, '.', '_' and '-'`
  return undefined
}

// KRaft's ReplicationControlManager answers POLICY_VIOLATION with exactly this
// message (clients and tests match on it) when a request adds more than its cap.
export const TOO_MANY_PARTITIONS_PER_REQUEST = 'Excessively large number of partitions per request.'

/** Kafka's internal topics: clients may not produce to them. */
export function isInternalTopic(name: string): boolean {
  return name === '__consumer_offsets' || name === '__transaction_state'
}

/**
 * The topics this broker hosts: names, ids, partition counts and config
 * overrides, kept in `topics.json` (replaced atomically on every change), with
 * the partition logs that back them.
 */
export class TopicRegistry {
  private readonly byName = new Map<string, Topic>()
  private readonly byId = new Map<string, Topic>()
  private readonly path: string

  constructor(
    private readonly dataDir: string,
    private readonly logs: LogManager,
    private readonly config: BrokerConfig,
    private readonly logger: Logger,
  ) {
    this.path = join(dataDir, TOPICS_FILE)
  }

  /**
   * Reads topics.json and attaches the logs found on disk. A partition directory
   * with no entry (topics.json lost or from an older layout) is adopted as a
   * topic with a new id rather than silently ignored.
   */
  load(): void {
    let stored: StoredTopic[] = []
    try {
      const parsed = JSON.parse(readFileSync(this.path, 'utf8')) as { topics?: StoredTopic[] }
      stored = Array.isArray(parsed.topics) ? parsed.topics : []
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.logger.warn(`ignoring ${this.path}: ${(err as Error).message}`)
    }
    const counts = new Map<string, number>()
    for (const log of this.logs.all()) counts.set(log.topic, Math.max(counts.get(log.topic) ?? 0, log.partition + 1))
    for (const s of stored) {
      if (invalidTopicName(s.name) !== undefined || typeof s.topicId !== 'string') continue
      this.attach(s.name, s.topicId, Math.max(s.partitions, counts.get(s.name) ?? 0), s.configs ?? {})
      counts.delete(s.name)
    }
    for (const [name, partitions] of counts) {
      if (invalidTopicName(name) !== undefined) continue
      this.logger.warn(`adopting topic ${name} (${partitions} partition(s)) found on disk without an entry in ${TOPICS_FILE}`)
      this.attach(name, randomUuid(), partitions, {})
    }
    this.save()
  }

  get(name: string): Topic | undefined {
    return this.byName.get(name)
  }

  getById(topicId: string): Topic | undefined {
    return this.byId.get(topicId)
  }

  all(): IterableIterator<Topic> {
    return this.byName.values()
  }

  get size(): number {
    return this.byName.size
  }

  /** Partitions hosted, over every topic. */
  get partitionCount(): number {
    let n = 0
    for (const t of this.byName.values()) n += t.logs.length
    return n
  }

  /**
   * Why `additional` more partitions would break max.broker.partitions, or
   * undefined when they fit. `current` is what counts as hosted already: a
   * request with many topics counts once and adds what it grants as it goes,
   * rather than walking every topic for each of its own.
   */
  partitionBudgetError(additional: number, current = this.partitionCount): string | undefined {
    const limit = this.config.maxBrokerPartitions
    const after = current + additional
    if (after <= limit) return undefined
    return `${additional} more partition(s) would bring this broker to ${after}, above its limit of ${limit} (max.broker.partitions)`
  }

  /** Creates a topic (the caller has checked the name, count and configs). */
  create(name: string, partitions: number, configs: Record<string, string> = {}): Topic {
    if (this.byName.has(name)) throw new Error(`topic ${name} already exists`)
    const topic = this.attach(name, randomUuid(), partitions, configs)
    this.save()
    this.logger.info(`created topic ${name} with ${partitions} partition(s)`)
    return topic
  }

  /** Grows a topic to `total` partitions. */
  addPartitions(topic: Topic, total: number): void {
    for (let p = topic.logs.length; p < total; p++) topic.logs.push(this.logs.getOrCreate(topic.name, p, topic.settings.log))
    this.save()
  }

  /** Replaces a topic's config overrides and applies them to its logs. */
  setConfigs(topic: Topic, configs: Record<string, string>): void {
    topic.configs = configs
    topic.settings = topicSettings(configs, this.config)
    for (const log of topic.logs) log.config = { ...topic.settings.log }
    this.save()
  }

  delete(topic: Topic): void {
    this.byName.delete(topic.name)
    this.byId.delete(topic.topicId)
    this.save()
    for (let p = 0; p < topic.logs.length; p++) this.logs.deletePartition(topic.name, p)
    this.logger.info(`deleted topic ${topic.name}`)
  }

  private attach(name: string, topicId: string, partitions: number, configs: Record<string, string>): Topic {
    const settings = topicSettings(configs, this.config)
    const logs: PartitionLog[] = []
    for (let p = 0; p < partitions; p++) logs.push(this.logs.getOrCreate(name, p, settings.log))
    const topic: Topic = { name, topicId, isInternal: isInternalTopic(name), configs, settings, logs }
    this.byName.set(name, topic)
    this.byId.set(topicId, topic)
    return topic
  }

  private save(): void {
    const topics: StoredTopic[] = [...this.byName.values()].map((t) => ({
      name: t.name,
      topicId: t.topicId,
      partitions: t.logs.length,
      configs: t.configs,
    }))
    writeFileAtomicSync(this.path, JSON.stringify({ version: 1, topics }, null, 2) + '\n')
  }
}
