import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { randomUuid } from '@tidelog/protocol'
import type { BrokerConfig } from './config.js'
import { writeFileAtomicSync } from './log/checkpoint.js'
import { UnsupportedFormatError } from './log/errors.js'
import { DurableFile } from './durable-file.js'
import { DynamicConfigStore } from './dynamic-config.js'
import type { LogManager, PartitionLog } from './log/index.js'
import type { Logger } from './logger.js'
import { type TopicSettings, topicSettings, withDynamicDefaults } from './topic-config.js'

export const TOPICS_FILE = 'topics.json'
/**
 * The topics.json layout this release writes and reads. A file without a
 * version (from before versions were checked) is read as version 1; a newer
 * one stops startup rather than being mistaken for damage, so a later release
 * can change the layout and migrate.
 */
export const TOPICS_FORMAT_VERSION = 1

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

export interface StoredTopic {
  name: string
  topicId: string
  partitions: number
  configs: Record<string, string>
}

/**
 * The topics recorded in `<dataDir>/topics.json`: undefined when the file is
 * missing or unreadable (the partition directories are then adopted). Throws
 * UnsupportedFormatError for a file written by a newer release.
 */
export function readTopicsFile(dataDir: string, logger: Logger): StoredTopic[] | undefined {
  const path = join(dataDir, TOPICS_FILE)
  let parsed: { version?: unknown; topics?: unknown }
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8')) as typeof parsed
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') logger.warn(`ignoring ${path}: ${(err as Error).message}`)
    return undefined
  }
  const version = parsed.version ?? 1
  if (typeof version === 'number' && Number.isInteger(version) && version > TOPICS_FORMAT_VERSION) {
    throw new UnsupportedFormatError(path, version, TOPICS_FORMAT_VERSION)
  }
  if (version !== TOPICS_FORMAT_VERSION || !Array.isArray(parsed.topics)) {
    logger.warn(`ignoring ${path}: not a version ${TOPICS_FORMAT_VERSION} topics file`)
    return undefined
  }
  return (parsed.topics as StoredTopic[]).filter(
    (s) => s !== null && typeof s === 'object' && typeof s.name === 'string' && invalidTopicName(s.name) === undefined && typeof s.topicId === 'string',
  )
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
 * overrides, kept in `topics.json`, with the partition logs that back them.
 * The file is replaced atomically off the event loop; changes made while a
 * write is under way are coalesced into the next one, so a burst of creates
 * costs two writes, not one per topic. `persisted()` says when the changes
 * made so far are durable; handlers acknowledge after it.
 */
export class TopicRegistry {
  private readonly byName = new Map<string, Topic>()
  private readonly byId = new Map<string, Topic>()
  private readonly path: string
  private readonly file: DurableFile
  /** The broker's dynamic configs (KIP-226), in dynamic-configs.json; topics fall back to them. */
  readonly dynamic: DynamicConfigStore

  constructor(
    private readonly dataDir: string,
    private readonly logs: LogManager,
    private readonly config: BrokerConfig,
    private readonly logger: Logger,
  ) {
    this.path = join(dataDir, TOPICS_FILE)
    this.file = new DurableFile(this.path, TOPICS_FILE, logs, () => this.contents())
    this.dynamic = new DynamicConfigStore(dataDir, config.nodeId, logs, logger)
  }

  /**
   * Attaches the logs found on disk to the topics of topics.json (`stored`, as
   * readTopicsFile returned it; read here when not given). A partition
   * directory with no entry (topics.json lost, from an older layout, or a
   * create that crashed before it was recorded) is adopted as a topic with a
   * new id rather than silently ignored.
   */
  load(stored: StoredTopic[] = readTopicsFile(this.dataDir, this.logger) ?? []): void {
    // Before any topic's settings are computed: they fall back to the dynamic broker values.
    this.dynamic.load()
    const counts = new Map<string, number>()
    for (const log of this.logs.all()) counts.set(log.topic, Math.max(counts.get(log.topic) ?? 0, log.partition + 1))
    for (const s of stored) {
      this.attach(s.name, s.topicId, Math.max(s.partitions, counts.get(s.name) ?? 0), s.configs ?? {})
      counts.delete(s.name)
    }
    for (const [name, partitions] of counts) {
      if (invalidTopicName(name) !== undefined) continue
      this.logger.warn(`adopting topic ${name} (${partitions} partition(s)) found on disk without an entry in ${TOPICS_FILE}`)
      this.attach(name, randomUuid(), partitions, {})
    }
    // At startup, before any request: written in place.
    writeFileAtomicSync(this.path, this.contents())
  }

  /** Resolves once every change made so far is durable; rejects if that write failed (the data directory is then offline). */
  persisted(): Promise<void> {
    return this.file.persisted()
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
    void this.save()
    this.logger.info(`created topic ${name} with ${partitions} partition(s)`)
    return topic
  }

  /** Grows a topic to `total` partitions. */
  addPartitions(topic: Topic, total: number): void {
    for (let p = topic.logs.length; p < total; p++) topic.logs.push(this.logs.getOrCreate(topic.name, p, topic.settings.log))
    void this.save()
  }

  /**
   * Replaces a topic's config overrides and applies them to its live logs: the next
   * retention pass, segment roll, flush check and produce use the new values.
   */
  setConfigs(topic: Topic, configs: Record<string, string>): Promise<void> {
    topic.configs = configs
    this.apply(topic)
    return this.save()
  }

  /**
   * Replaces this broker's dynamic configs (its own, or the cluster default) and
   * re-applies every topic's settings, since topics without an override of their
   * own follow them. Resolves when the change is durable.
   */
  setBrokerConfigs(scope: 'node' | 'clusterDefault', configs: Record<string, string>): Promise<void> {
    const saved = this.dynamic.replace(scope, configs)
    for (const topic of this.byName.values()) this.apply(topic)
    return saved
  }

  private settingsOf(configs: Readonly<Record<string, string>>): TopicSettings {
    return topicSettings(withDynamicDefaults(configs, this.dynamic.layers), this.config)
  }

  private apply(topic: Topic): void {
    topic.settings = this.settingsOf(topic.configs)
    for (const log of topic.logs) log.config = { ...topic.settings.log }
  }

  /**
   * Deletes a topic. Its partition directories are renamed aside at once and
   * removed only after topics.json without it is durable (the commit point):
   * a crash before that finds the topic still listed and renames them back,
   * one after it finds them unlisted and removes them. Resolves at the commit.
   */
  delete(topic: Topic): Promise<void> {
    this.byName.delete(topic.name)
    this.byId.delete(topic.topicId)
    const committed = this.save()
    committed.catch(() => {})
    for (let p = 0; p < topic.logs.length; p++) this.logs.deletePartition(topic.name, p, committed)
    this.logger.info(`deleted topic ${topic.name}`)
    return committed
  }

  private attach(name: string, topicId: string, partitions: number, configs: Record<string, string>): Topic {
    const settings = this.settingsOf(configs)
    const logs: PartitionLog[] = []
    for (let p = 0; p < partitions; p++) logs.push(this.logs.getOrCreate(name, p, settings.log))
    const topic: Topic = { name, topicId, isInternal: isInternalTopic(name), configs, settings, logs }
    this.byName.set(name, topic)
    this.byId.set(topicId, topic)
    return topic
  }

  private contents(): string {
    const topics: StoredTopic[] = [...this.byName.values()].map((t) => ({
      name: t.name,
      topicId: t.topicId,
      partitions: t.logs.length,
      configs: t.configs,
    }))
    return JSON.stringify({ version: TOPICS_FORMAT_VERSION, topics }, null, 2) + '\n'
  }

  private save(): Promise<void> {
    return this.file.save()
  }
}
