/**
 * The README's compatibility table, built from what the tests recorded (test/helpers/
 * peers.ts writes test/interop/peers/*.json): a row says which peers it proves and by
 * which tests; the versions in its peer column are the ones those tests observed the
 * peers report at run time, so a version or a peer no passing test ran cannot appear.
 *
 *   npx tsx scripts/compat-matrix.ts --write           refresh README.md from the committed record
 *   npx tsx scripts/compat-matrix.ts --check-run DIR   CI, after the runs that wrote DIR
 *                                                      (TIDELOG_PEERS_RUN): every row's peers
 *                                                      were exercised in this run, at the
 *                                                      versions the README shows
 *
 * The committed record is refreshed by running the tests of a row (the whole interop
 * suite for all rows); a run restricted with -t rewrites a file's record with fewer tests,
 * which test/readme.test.ts then reports as a README that no longer matches.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { readRecords, RECORD_DIR, type Peer, type PeerRecord } from '../test/helpers/peer-record.js'

export interface CompatRow {
  /** Peers the row claims; each must be on record for at least one of `tests`. */
  peers: Peer[]
  direction: string
  /** What is proven, without versions (those come from the record). */
  what: string
  /** Test files (from the repo root) whose passing run is the evidence. */
  tests: string[]
}

/** How a peer is named in the table (where it comes from, when that matters). */
const LABEL: Record<Peer, string> = {
  'Apache Kafka': 'Apache Kafka',
  'Java client': 'Java client',
  kcat: 'kcat (Debian)',
  'kafka-python': 'kafka-python (Debian)',
  'confluent-kafka': 'confluent-kafka (Debian)',
  kafkajs: 'kafkajs',
  'zstd CLI': 'zstd CLI (Debian)',
  'lz4 CLI': 'lz4 CLI (Debian)',
  'Kafka Connect': 'Kafka Connect (connect-runtime + connect-file)',
}

export const compatRows: CompatRow[] = [
  { peers: ['Apache Kafka'], direction: 'codec -> broker', what: 'ApiVersions 0-4, Metadata (every shared version), CreateTopics, Produce (none, gzip, snappy, lz4), Fetch, ListOffsets; reads batches Kafka recompressed (gzip, snappy, lz4, zstd); a corrupted CRC is refused; golden responses stored', tests: ['test/interop/codec-kafka.test.ts', 'packages/protocol/test/golden-kafka.test.ts'] },
  { peers: ['Java client'], direction: 'Java client -> codec', what: 'every request and response of an idempotent snappy producer (ProducerPerformance) and a group consumer (ConsoleConsumer) decodes and re-encodes byte for byte; golden fixtures stored', tests: ['test/interop/java-client-bytes.test.ts'] },
  { peers: ['Java client'], direction: 'partitioning', what: '10,000 keys (ASCII and not) land where murmur2Partition says', tests: ['test/interop/partition-equivalence.test.ts'] },
  { peers: ['kafkajs'], direction: 'codec', what: 'request encodings of 102 API versions and record batches (none, gzip) byte-identical', tests: ['packages/protocol/test/golden/kafkajs-requests.test.ts', 'packages/protocol/test/records.test.ts'] },
  { peers: ['Apache Kafka', 'kafkajs'], direction: 'Admin -> broker', what: 'topics, partitions, configs, offsets, records, groups (a kafkajs member described), cluster; SASL PLAIN, SCRAM-SHA-256/512, re-authentication; TLS', tests: ['test/interop/client-admin.test.ts', 'test/interop/client-security.test.ts'] },
  { peers: ['Apache Kafka', 'kcat', 'kafkajs'], direction: 'producer -> broker', what: 'none, gzip, snappy, lz4 and zstd batches accepted by Kafka and read back by kcat; gzip read back by kafkajs', tests: ['test/interop/producer-codecs-kafka.test.ts'] },
  { peers: ['Apache Kafka'], direction: 'producer -> broker', what: '1,000,000 idempotent records through 5 socket cuts, exactly once and in order', tests: ['test/interop/producer-exactly-once.test.ts'] },
  { peers: ['Apache Kafka', 'Java client'], direction: 'consumer -> broker', what: 'consumer groups (300,000 records exactly once, churn under load), commits and resume; cooperative-sticky, static membership, read_committed; a group shared with the Java ConsoleConsumer; 1 GiB in bounded memory', tests: ['test/interop/consumer-kafka.test.ts', 'test/interop/consumer-memory-kafka.test.ts'] },
  { peers: ['Apache Kafka'], direction: 'clients -> oldest claimed release', what: 'ZooKeeper mode (as 3.0 ran in production): describeCluster, createTopics, describeTopics, listOffsets; the idempotent producer with none, gzip, snappy, lz4, zstd, read back in order by the consumer; a group commits and the next member resumes', tests: ['test/interop/clients-kafka-3.0.test.ts'] },
  { peers: ['Apache Kafka', 'kcat'], direction: 'zstd writer -> broker', what: 'zstd batches from the pure-TypeScript compressor (Node 20 has no zstd in node:zlib) accepted (Kafka decompresses to validate) and served back by Kafka, read by the tidelog consumer and by kcat', tests: ['test/interop/zstd-kafka.test.ts'] },
  { peers: ['zstd CLI', 'lz4 CLI'], direction: 'codec -> reference decoders', what: 'frames from the zstd and lz4 compressors decoded by the reference CLIs; frames the CLIs write decoded by ours', tests: ['test/interop/zstd-cli.test.ts', 'test/interop/lz4-cli.test.ts'] },
  { peers: ['Apache Kafka'], direction: 'producer + consumer -> cluster', what: '3-node cluster, leader killed mid-stream (RF 3, min.insync.replicas 2): nothing acknowledged lost or duplicated, the group keeps reading', tests: ['test/interop/failover-cluster.test.ts'] },
  { peers: ['Java client'], direction: 'Java -> tidelog broker', what: 'TopicCommand, ConfigCommand, ConsumerGroupCommand; idempotent snappy producer; two group consumers read everything; ProducerPerformance, ConsumerPerformance', tests: ['test/interop/java-clients-broker.test.ts'] },
  { peers: ['kcat'], direction: 'kcat -> tidelog broker', what: '10,000 keyed records with -z none, gzip, snappy, lz4, zstd read back byte-identical by kcat and by the tidelog consumer; -L', tests: ['test/interop/kcat-broker.test.ts'] },
  { peers: ['kafka-python', 'confluent-kafka'], direction: 'Python -> tidelog broker', what: 'produce (gzip / idempotent snappy), consume in a group, commit, resume', tests: ['test/interop/python-clients-broker.test.ts'] },
  { peers: ['Apache Kafka', 'kafkajs'], direction: '@tidelog/kafkajs -> broker', what: 'programs written from kafkajs 2.2 docs (producer, consumer, admin, transactions) observe the same records, offsets, commits, admin answers, transaction errors and event order on kafkajs and, import changed, on @tidelog/kafkajs', tests: ['test/interop/kafkajs-compat.test.ts'] },
  { peers: ['kafkajs'], direction: 'kafkajs -> tidelog broker', what: 'producer (idempotent too), admin, 3-member group exactly once, resume after restart', tests: ['apps/broker/test/e2e/kafkajs.test.ts', 'apps/broker/test/e2e/kafkajs-admin.test.ts', 'apps/broker/test/e2e/kafkajs-group.test.ts'] },
  { peers: ['kafkajs'], direction: 'kafkajs -> tidelog broker', what: 'topic configs: describeConfigs of a topic and the broker with synonyms; INVALID_CONFIG; validateOnly creates nothing', tests: ['apps/broker/test/e2e/kafkajs-topic-configs.test.ts'] },
  { peers: ['Java client', 'Apache Kafka'], direction: 'Java -> tidelog broker', what: "topic configs: ConfigCommand --describe --all prints the topic configs Kafka 4.4 prints (checked-in golden), with sources and synonyms, and the broker's settings; TopicCommand shows Kafka's INVALID_CONFIG messages; a live Kafka 4.4 still defines the golden's names", tests: ['test/interop/topic-configs-broker.test.ts'] },
  { peers: ['kafkajs'], direction: 'kafkajs -> tidelog broker', what: 'config changes: alterConfigs on a topic and the broker, read back with their sources; INVALID_CONFIG for a bad value', tests: ['apps/broker/test/configs-kafkajs.test.ts'] },
  { peers: ['Apache Kafka'], direction: 'Kafka tools -> tidelog and Kafka side by side', what: 'kafka-configs.sh --alter --add-config / --delete-config / --describe for a topic, the broker and the cluster default, kafka-topics.sh --create --config / --alter / --describe and kafka-log-dirs.sh --describe print the same on both (ELR fields aside); the same refusals', tests: ['test/interop/configs-tools.test.ts'] },
  { peers: ['Apache Kafka', 'Java client'], direction: 'transactional producer -> Kafka and tidelog brokers', what: 'transaction version 1 (3.x) and 2 (KIP-890, 4.x and the tidelog broker): commit, abort, transaction(fn), fencing by a second producer, a transaction the broker times out, requireStable offsets; an exactly-once copier killed and restarted copies every record once, checked by the Java read_committed consumer and ours', tests: ['test/interop/transactions-kafka.test.ts'] },
  { peers: ['Apache Kafka'], direction: 'Kafka tools -> tidelog log files', what: "DumpLogSegments decodes the broker's commit and abort markers with their coordinator epoch and its aborted-transaction index; the Java read_committed consumer skips aborted records and stops at an open transaction", tests: ['test/interop/txn-storage-kafka-tools.test.ts'] },
  { peers: ['kafkajs'], direction: 'kafkajs -> tidelog broker', what: 'transactions: producer.transaction() send and sendOffsets commit together; an aborted transaction leaves no records and no offsets', tests: ['apps/broker/test/txn/kafkajs.test.ts'] },
  { peers: ['Java client', 'kcat', 'kafka-python', 'confluent-kafka', 'kafkajs'], direction: 'clients -> tidelog broker security', what: 'SASL_SSL with SCRAM-SHA-512 (a user created by ConfigCommand) and with OAUTHBEARER (the Java client\'s and librdkafka\'s unsecured development tokens; a JWKS-signed token from confluent-kafka\'s oauth_cb), SSL with client certificates; wrong passwords, bad tokens and certificates refused with each client\'s own error; KIP-368 re-authentication loses nothing', tests: ['test/interop/security-broker.test.ts'] },
  { peers: ['Java client', 'kcat'], direction: 'clients -> tidelog broker TLS', what: "certificates from `tidelog-broker certs`: the broker README's five-line secure setup (a SASL_SSL broker, a SCRAM user from kafka-configs.sh, a Java producer to localhost) runs as written; the Java client (PEM and PKCS12 keystores and truststores, a PKCS12 broker) and kcat pass their host name checks for localhost and 127.0.0.1 over SSL and SASL_SSL, and 127.0.0.2 is refused", tests: ['test/interop/security-broker-devcerts.test.ts'] },
  { peers: ['Apache Kafka', 'kcat'], direction: 'log compaction, tidelog and Kafka side by side', what: "the same keyed workload (updates, tombstones, small segments, an eager cleaner) on Apache Kafka and on tidelog keeps the same (offset, key, value) set, read by kcat: the latest record per key below the active segment, tombstones until delete.retention.ms after the cleaning that first kept them; Kafka's DumpLogSegments reads tidelog's cleaned segments and indexes", tests: ['test/interop/compaction-kafka.test.ts'] },
  { peers: ['Apache Kafka', 'Java client'], direction: 'Kafka tools -> tidelog broker ACLs', what: 'kafka-acls.sh adds, lists (MATCH too) and removes LITERAL, PREFIXED, DENY and wildcard ACLs with the same output as on Apache Kafka with StandardAuthorizer; the Java producer is refused with TopicAuthorizationException, then served once WRITE is granted, on both', tests: ['test/interop/acls-kafka-acls.test.ts'] },
  { peers: ['Apache Kafka', 'Java client'], direction: 'Kafka tools -> tidelog broker client quotas', what: 'kafka-configs.sh sets, describes and deletes user, client-id and default-entity quotas with the same output (errors too) as on Apache Kafka; a Java producer over a client-id quota is throttled (produce-throttle-time-max > 0, the same throttle_time_ms within 10%) on both; the Java Admin over controller_mutation_rate (KIP-599) gets ThrottlingQuotaExceededException for the same topic on both', tests: ['test/interop/acls-kafka-acls.test.ts'] },
  { peers: ['Apache Kafka', 'Java client'], direction: 'Java tools -> broker', what: "transactions: Kafka's TransactionalMessageCopier, manual and --group-mode --use-group-metadata, with random aborts and copier kill -9 (and, on tidelog, a broker restart and a broker kill -9); a read_committed ConsoleConsumer reads exactly the input, once each, in order, on Apache Kafka and on tidelog", tests: ['test/interop/transactions-copier.test.ts'] },
  { peers: ['Apache Kafka', 'Java client'], direction: 'Java tools -> broker', what: 'transactions: kafka-transactions.sh list, describe, describe-producers, find-hanging and abort, on a transaction left open by a producer killed -9 and on a hanging one; read_committed then reads past both, on Apache Kafka and on tidelog', tests: ['test/interop/transactions-tools.test.ts'] },
  { peers: ['Apache Kafka', 'confluent-kafka', 'kafkajs'], direction: 'clients -> broker', what: 'transactions: confluent-kafka (librdkafka) and kafkajs commit, abort and send offsets in a transaction; their read_committed consumers see committed records only, on Apache Kafka and on tidelog', tests: ['test/interop/transactions-clients.test.ts'] },
  { peers: ['Apache Kafka', 'kafkajs', 'Java client'], direction: 'kafkajs + Java consumer -> broker', what: 'transactions, Jepsen-style (test/jepsen/txn-checker.ts, seeded): 2,000 transactions over 4 partitions (kafkajs; on tidelog also our producer, its connections cut, stalled and half-closed mid-request by test/helpers/fault-proxy.ts) with crashes mid-transaction, fencing races, timeouts and 2 broker restarts (kill -9 on tidelog, clean on Kafka), read back by Java read_committed; no aborted read, lost write, duplicate, torn transaction, backwards read, LSO regression or hanging transaction', tests: ['test/interop/transactions-jepsen.test.ts'] },
  { peers: ['Java client'], direction: 'Kafka Streams test driver -> @tidelog/streams', what: "seven topologies (word count through a repartition topic, filter/map/branch chains, aggregate with a custom initializer then KTable filter and mapValues, selectKey + count, merge + repartition, a table re-keyed by groupBy with count and an aggregate with a subtractor, a Processor API topology with stream-time and wall-clock punctuators) give the same describe() text and the same output records, in order, as Kafka Streams' own TopologyTestDriver (kafka-streams 4.4, checked-in golden)", tests: ['test/interop/streams-golden.test.ts', 'packages/streams/test/golden.test.ts'] },
  { peers: ['Java client'], direction: 'Kafka Streams (Java) -> tidelog broker', what: "a Kafka Streams 4.4 application, exactly_once_v2 over the classic protocol with Streams' own assignor: a word count through a repartition topic into a compacted changelog, a windowed count (compact,delete changelog) and a stream-table join; killed -9 mid-stream and restarted, a read_committed reader sees every count sequence and join result exactly once; internal topics created with Streams' configs, repartition records purged by DeleteRecords", tests: ['test/interop/streams-java-broker.test.ts'] },
  { peers: ['Apache Kafka'], direction: 'tidelog CLI -> Kafka, next to Kafka tools', what: "tidelog topics create / alter / describe / delete print what kafka-topics.sh --describe prints (ELR columns aside); produce with keys and headers and consume --json / --format give the records kafka-console-consumer.sh prints; groups describe and reset-offsets --dry-run / --execute give kafka-consumer-groups.sh's offsets, log ends and lag; a missing topic exits 1 with UNKNOWN_TOPIC_OR_PARTITION", tests: ['test/interop/cli-kafka.test.ts'] },
  { peers: ['Apache Kafka'], direction: '@tidelog/streams KafkaStreams -> broker', what: 'a word count at_least_once: the repartition (delete) and changelog (compact) topics created with Kafka Streams\' configs, counts right, a restarted instance restores its store from the changelog and counts on; exactly_once_v2 with an instance killed (-9) and restarted while 1,000 records flow: every input echoed once, every count and sum exact', tests: ['test/interop/streams-kafka.test.ts', 'packages/streams/test/kafka-streams.test.ts'] },
  { peers: ['Kafka Connect'], direction: 'Kafka Connect (distributed worker) -> tidelog broker', what: 'ConnectDistributed creates its config, offset and status topics compacted (and checks them), joins its worker group, runs FileStreamSource and FileStreamSink connectors created over REST: every line of the source file reaches the topic and the sink file once; the SIGTERM\'d worker restarts with exactly.once.source.support=enabled (KIP-618), fences and resumes the source from its stored offsets, writing transactionally, with no duplicate', tests: ['test/interop/connect-broker.test.ts'] },
]

const START = '<!-- compat-table:start (generated by scripts/compat-matrix.ts from test/interop/peers/) -->'
const END = '<!-- compat-table:end -->'
const root = fileURLToPath(new URL('../', import.meta.url))
export const readmePath = `${root}README.md`

export function missingTests(): string[] {
  return compatRows.flatMap((r) => r.tests).filter((t) => !existsSync(`${root}${t}`))
}

/** "4.4.0" before "3.9.1", numerically. */
function newestFirst(a: string, b: string): number {
  const pa = a.split(/[.\s]/).map((x) => Number.parseInt(x, 10) || 0)
  const pb = b.split(/[.\s]/).map((x) => Number.parseInt(x, 10) || 0)
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pb[i] ?? 0) - (pa[i] ?? 0)
  return 0
}

/** For each row and claimed peer, the versions its tests recorded; rows whose peer no test recorded are listed as problems. */
export function resolveRows(records: Map<string, PeerRecord[]>): { rows: { row: CompatRow; versions: Map<Peer, string[]> }[]; problems: string[] } {
  const problems: string[] = []
  const rows = compatRows.map((row) => {
    const versions = new Map<Peer, string[]>()
    for (const peer of row.peers) {
      const seen = new Set(row.tests.flatMap((t) => (records.get(t) ?? []).filter((r) => r.peer === peer).map((r) => r.version)))
      if (seen.size === 0) problems.push(`"${row.direction}: ${row.what.slice(0, 40)}..." claims ${peer}, but none of ${row.tests.join(', ')} recorded running it`)
      versions.set(peer, [...seen].sort(newestFirst))
    }
    return { row, versions }
  })
  return { rows, problems }
}

export function compatTable(records: Map<string, PeerRecord[]> = readRecords()): string {
  const { rows, problems } = resolveRows(records)
  if (problems.length) throw new Error(`the peer record does not back the compatibility table:\n${problems.join('\n')}`)
  return [
    START,
    '| peer (version seen at run time) | direction | what is proven | evidence |',
    '| --- | --- | --- | --- |',
    ...rows.map(({ row, versions }) => {
      const peers = row.peers.map((p) => `${LABEL[p]} ${versions.get(p)!.join(', ')}`).join('; ')
      return `| ${peers} | ${row.direction} | ${row.what} | ${row.tests.map((t) => `\`${t}\``).join(', ')} |`
    }),
    END,
  ].join('\n')
}

/** The Apache Kafka releases the record shows the interop suite running, newest first. */
export function kafkaVersionsOnRecord(records: Map<string, PeerRecord[]> = readRecords()): string[] {
  return [...new Set([...records.values()].flat().filter((r) => r.peer === 'Apache Kafka').map((r) => r.version))].sort(newestFirst)
}

export function readmeWithCompatTable(readme: string, records?: Map<string, PeerRecord[]>): string {
  // Any start marker (its note may change), up to the end marker.
  const a = readme.indexOf('<!-- compat-table:start')
  const b = readme.indexOf(END)
  if (a < 0 || b < 0) throw new Error('README.md has no compat-table markers')
  return readme.slice(0, a) + compatTable(records) + readme.slice(b + END.length)
}

/**
 * CI: the record this run wrote (TIDELOG_PEERS_RUN) must back every row by itself, and
 * give exactly the table the README shows; otherwise a peer was not exercised (or ran at
 * another version) and the README claims what this run did not prove.
 */
export function checkRun(dir: string): string[] {
  const fresh = readRecords(dir)
  const { problems } = resolveRows(fresh)
  if (problems.length) return problems
  const readme = readFileSync(readmePath, 'utf8')
  if (readmeWithCompatTable(readme, fresh) !== readme) {
    return [`this run recorded other peer versions than README.md shows; refresh: run the tests, then npx tsx scripts/compat-matrix.ts --write (record: ${RECORD_DIR})`]
  }
  return []
}

if (process.argv.includes('--write')) {
  writeFileSync(readmePath, readmeWithCompatTable(readFileSync(readmePath, 'utf8')))
}
const runAt = process.argv.indexOf('--check-run')
if (runAt >= 0) {
  const dir = process.argv[runAt + 1]
  if (!dir) throw new Error('--check-run needs the directory TIDELOG_PEERS_RUN pointed at')
  const problems = checkRun(dir)
  if (problems.length) {
    console.error(`compat-matrix: the README's compatibility table is not what this run proved:\n${problems.join('\n')}`)
    process.exit(1)
  }
  console.log(`compat-matrix: every compatibility row's peers were exercised in this run (${dir})`)
}
