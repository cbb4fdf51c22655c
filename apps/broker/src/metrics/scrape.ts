import type { BrokerMetrics, TopicCounters } from './broker-metrics.js'
import { renderTlsMetrics } from '../security/certs/metrics.js'
import { ExpositionWriter } from './exposition.js'
import { groupLag } from './lag.js'
import { renderNetworkMetrics } from './network.js'
import { writeCleanerMetrics } from '../log/cleaner-metrics.js'
import { renderQuotaMetrics } from '../quotas/metrics.js'

// Names follow what the Prometheus JMX exporter makes of Kafka's MBeans
// (kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec -> kafka_server_brokertopicmetrics_bytesin_total),
// so dashboards built for Kafka read this broker unchanged. Group lag takes kafka_exporter's names,
// since Kafka's broker has no lag MBean.
const TOPIC_COUNTERS: readonly [keyof TopicCounters, string, string][] = [
  ['bytesIn', 'kafka_server_brokertopicmetrics_bytesin_total', 'Record bytes appended by produce requests (BytesInPerSec); no topic label: all topics.'],
  ['bytesOut', 'kafka_server_brokertopicmetrics_bytesout_total', 'Record bytes sent in fetch responses (BytesOutPerSec); no topic label: all topics.'],
  ['messagesIn', 'kafka_server_brokertopicmetrics_messagesin_total', 'Records appended (MessagesInPerSec); no topic label: all topics.'],
  ['produceRequests', 'kafka_server_brokertopicmetrics_totalproducerequests_total', 'Produce requests per topic (TotalProduceRequestsPerSec).'],
  ['fetchRequests', 'kafka_server_brokertopicmetrics_totalfetchrequests_total', 'Fetch requests per topic (TotalFetchRequestsPerSec).'],
  ['failedProduceRequests', 'kafka_server_brokertopicmetrics_failedproducerequests_total', 'Produce requests with a failed partition (FailedProduceRequestsPerSec).'],
]

/** One scrape of /metrics: counters as counted, everything else read from the broker now. */
export function renderMetrics(m: BrokerMetrics): string {
  const w = new ExpositionWriter()
  const broker = m.context
  for (const [key, name, help] of TOPIC_COUNTERS) {
    w.family(name, 'counter', help)
    w.sample(name, m.total[key])
    for (const [topic, c] of m.topics) w.sample(name, c[key], { topic })
  }

  w.family('kafka_network_requestmetrics_requests_total', 'counter', 'Requests answered, by API and version (RequestsPerSec).')
  for (const s of m.requests.values()) {
    for (const [version, n] of s.byVersion) w.sample('kafka_network_requestmetrics_requests_total', n, { request: s.name, version })
  }
  w.family('kafka_network_requestmetrics_totaltimems', 'histogram', 'Milliseconds from decoding a request to its response being ready (TotalTimeMs).')
  for (const s of m.requests.values()) w.histogram('kafka_network_requestmetrics_totaltimems', s.totalTimeMs.bounds, s.totalTimeMs.counts, s.totalTimeMs.sum, { request: s.name })
  w.family('kafka_network_requestmetrics_requestbytes_total', 'counter', 'Request frame bytes, by API (RequestBytes).')
  for (const s of m.requests.values()) w.sample('kafka_network_requestmetrics_requestbytes_total', s.requestBytes, { request: s.name })
  w.family('kafka_network_requestmetrics_responsebytes_total', 'counter', 'Response frame bytes, by API.')
  for (const s of m.requests.values()) w.sample('kafka_network_requestmetrics_responsebytes_total', s.responseBytes, { request: s.name })

  let partitions = 0
  let topics = 0
  const size = new ExpositionWriter().family('kafka_log_log_size', 'gauge', 'Bytes of a partition log on disk (Log Size).')
  const start = new ExpositionWriter().family('kafka_log_log_logstartoffset', 'gauge', 'First offset of a partition (LogStartOffset).')
  const end = new ExpositionWriter().family('kafka_log_log_logendoffset', 'gauge', 'Next offset of a partition (LogEndOffset).')
  const segments = new ExpositionWriter().family('kafka_log_log_numlogsegments', 'gauge', 'Segments of a partition (NumLogSegments).')
  for (const t of broker.topics.all()) {
    topics++
    t.logs.forEach((log, partition) => {
      partitions++
      if (log.isClosed) return
      const labels = { topic: t.name, partition }
      size.sample('kafka_log_log_size', log.size, labels)
      start.sample('kafka_log_log_logstartoffset', log.logStartOffset, labels)
      end.sample('kafka_log_log_logendoffset', log.logEndOffset, labels)
      segments.sample('kafka_log_log_numlogsegments', log.segments.length, labels)
    })
  }
  w.family('kafka_server_replicamanager_partitioncount', 'gauge', 'Partitions this broker hosts (PartitionCount).').sample('kafka_server_replicamanager_partitioncount', partitions)
  w.family('kafka_controller_kafkacontroller_globaltopiccount', 'gauge', 'Topics in the cluster (GlobalTopicCount).').sample('kafka_controller_kafkacontroller_globaltopiccount', topics)

  const lag = new ExpositionWriter().family('kafka_consumergroup_lag', 'gauge', 'High watermark minus the committed offset, per group and partition.')
  const current = new ExpositionWriter().family('kafka_consumergroup_current_offset', 'gauge', 'Committed offset, per group and partition.')
  const members = new ExpositionWriter().family('kafka_consumergroup_members', 'gauge', 'Members of a group.')
  for (const g of broker.groups.listGroups()) {
    members.sample('kafka_consumergroup_members', broker.groups.describeGroup(g.groupId).members.length, { consumergroup: g.groupId })
    for (const p of groupLag(broker, g.groupId)) {
      if (p.lag === null) continue
      const labels = { consumergroup: g.groupId, topic: p.topic, partition: p.partition }
      lag.sample('kafka_consumergroup_lag', p.lag, labels)
      current.sample('kafka_consumergroup_current_offset', p.committed, labels)
    }
  }

  const d = m.eventLoopDelay
  const loop = new ExpositionWriter()
  for (const [k, v] of Object.entries(d)) {
    loop.family(`nodejs_eventloop_lag_${k}_seconds`, 'gauge', `Event loop delay ${k} over the last sampling interval.`).sample(`nodejs_eventloop_lag_${k}_seconds`, v)
  }
  const mem = process.memoryUsage()
  loop.family('process_resident_memory_bytes', 'gauge', 'Resident memory size in bytes.').sample('process_resident_memory_bytes', mem.rss)
  loop.family('nodejs_heap_size_used_bytes', 'gauge', 'V8 heap in use, bytes.').sample('nodejs_heap_size_used_bytes', mem.heapUsed)
  writeCleanerMetrics(loop, broker.logs.cleaner)
  loop.family('process_start_time_seconds', 'gauge', 'When the broker started, Unix seconds.').sample('process_start_time_seconds', Math.floor(m.startedAt / 1000))
  return w.text() + renderNetworkMetrics(m) + renderQuotaMetrics(m.quotaAccounts()) + renderTlsMetrics(m.tlsStatus()) + size.text() + start.text() + end.text() + segments.text() + lag.text() + current.text() + members.text() + loop.text()
}
