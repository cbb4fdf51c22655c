import { ExpositionWriter } from '../metrics/exposition.js'
import type { SensorAccount } from './manager.js'

/**
 * Kafka's client quota MBeans, kafka.server:type=Produce|Fetch|Request|ControllerMutation with
 * user and client-id tags (empty where the quota entity has no such part, as Kafka tags them),
 * under the names the Prometheus JMX exporter gives them (client-id becomes client_id).
 */
const FAMILIES: readonly { type: SensorAccount['type']; prefix: string; rateName: string; rateHelp: string }[] = [
  { type: 'produce', prefix: 'kafka_server_produce', rateName: 'byte_rate', rateHelp: 'Produce request bytes per second counted against producer_byte_rate (byte-rate).' },
  { type: 'fetch', prefix: 'kafka_server_fetch', rateName: 'byte_rate', rateHelp: 'Fetched record bytes per second counted against consumer_byte_rate (byte-rate).' },
  { type: 'request', prefix: 'kafka_server_request', rateName: 'request_time', rateHelp: 'Percent of one request thread used, against request_percentage (request-time).' },
  { type: 'mutation', prefix: 'kafka_server_controllermutation', rateName: 'mutation_rate', rateHelp: 'Partitions created or deleted per second, against controller_mutation_rate (mutation-rate).' },
]

/** The quota families for one scrape; a family without sensors is left out, as Kafka registers them on first use. */
export function renderQuotaMetrics(accounts: readonly SensorAccount[]): string {
  const w = new ExpositionWriter()
  for (const f of FAMILIES) {
    const mine = accounts.filter((a) => a.type === f.type)
    if (mine.length === 0) continue
    const labels = (a: SensorAccount) => ({ user: a.user, client_id: a.clientId })
    w.family(`${f.prefix}_${f.rateName}`, 'gauge', f.rateHelp)
    for (const a of mine) w.sample(`${f.prefix}_${f.rateName}`, a.rate, labels(a))
    w.family(`${f.prefix}_throttle_time`, 'gauge', 'Average throttle answered over the quota window, ms (throttle-time); NaN when none.')
    for (const a of mine) w.sample(`${f.prefix}_throttle_time`, a.throttleTimeAvg, labels(a))
    if (f.type === 'mutation') {
      w.family(`${f.prefix}_tokens`, 'gauge', 'Tokens left in the token bucket (tokens); below zero the next mutation is refused.')
      for (const a of mine) w.sample(`${f.prefix}_tokens`, a.tokens ?? 0, labels(a))
    }
  }
  return w.text()
}
