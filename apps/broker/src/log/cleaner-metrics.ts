import type { ExpositionWriter } from '../metrics/exposition.js'
import type { LogCleaner } from './cleaner.js'

// Kafka's log cleaner gauges (kafka.log:type=LogCleaner and type=LogCleanerManager),
// named as the Prometheus JMX exporter names them: type and name lowercased, '-' as '_'.
const GAUGES: readonly [string, string, (c: LogCleaner, now: number) => number][] = [
  ['kafka_log_logcleaner_max_clean_time_secs', 'Seconds the last cleaning took (max-clean-time-secs).', (c) => c.stats.lastCleanSecs],
  ['kafka_log_logcleaner_max_buffer_utilization_percent', "Share of the key map (log.cleaner.dedupe.buffer.size) the last cleaning used (max-buffer-utilization-percent).", (c) => c.stats.bufferUtilizationPercent],
  ['kafka_log_logcleaner_cleaner_recopy_percent', 'Bytes written as a share of bytes read by the last cleaning (cleaner-recopy-percent).', (c) => c.stats.recopyPercent],
  ['kafka_log_logcleanermanager_max_dirty_percent', 'Dirty share of the log the cleaner last chose, 0 when none was cleanable (max-dirty-percent).', (c) => c.stats.maxDirtyPercent],
  ['kafka_log_logcleanermanager_time_since_last_run_ms', 'Milliseconds since the cleaner last looked for a log to clean (time-since-last-run-ms).', (c, now) => Math.max(0, now - c.stats.lastRunAt)],
]

/** Appends the cleaner's families to a /metrics scrape. */
export function writeCleanerMetrics(w: ExpositionWriter, cleaner: LogCleaner): void {
  const now = Date.now()
  for (const [name, help, read] of GAUGES) w.family(name, 'gauge', help).sample(name, read(cleaner, now))
  const logDirectory = cleaner.dataDir
  w.family('kafka_log_logcleanermanager_uncleanable_partitions_count', 'gauge', 'Compacted partitions the cleaner gave up on after an error, until a restart (uncleanable-partitions-count).')
  w.sample('kafka_log_logcleanermanager_uncleanable_partitions_count', cleaner.uncleanable.size, { logDirectory })
  w.family('kafka_log_logcleanermanager_uncleanable_bytes', 'gauge', 'Bytes of the uncleanable partitions (uncleanable-bytes).')
  w.sample('kafka_log_logcleanermanager_uncleanable_bytes', cleaner.uncleanableBytes(), { logDirectory })
}
