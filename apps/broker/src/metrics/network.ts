import { errorByCode } from '@tidelog/protocol'
import type { BrokerMetrics } from './broker-metrics.js'
import { ExpositionWriter } from './exposition.js'

// The broker runs one event loop where Kafka runs num.network.threads processors: its
// socket-server-metrics carry a networkProcessor tag, kept here (always "0") so that
// dashboards summing over it read this broker unchanged.
const PROCESSOR = '0'

/**
 * Errors per API and code, connections per listener, failed authentications and the request
 * queue, under the names the Prometheus JMX exporter gives Kafka's MBeans:
 * kafka.network:type=RequestMetrics,name=ErrorsPerSec,request=R,error=E and
 * kafka.server:type=socket-server-metrics,listener=L,networkProcessor=N (connection-count,
 * connection-creation-total, connection-close-total, failed-authentication-total) and
 * kafka.network:type=RequestChannel,name=RequestQueueSize.
 */
export function renderNetworkMetrics(m: BrokerMetrics): string {
  const w = new ExpositionWriter()
  w.family('kafka_network_requestmetrics_errors_total', 'counter', 'Error codes in responses, by API and error, NONE included (ErrorsPerSec).')
  for (const s of m.requests.values()) {
    for (const [code, n] of [...s.errors].sort((a, b) => a[0] - b[0])) w.sample('kafka_network_requestmetrics_errors_total', n, { request: s.name, error: errorByCode(code).name })
  }
  const socket = m.socket
  const names = [...new Set([...m.listeners.keys(), ...socket.connections.keys(), ...socket.failedAuthentications.keys()])].sort()
  const labels = (listener: string) => ({ listener, networkProcessor: PROCESSOR })
  const families: [string, 'gauge' | 'counter', string, (l: string) => number][] = [
    ['kafka_server_socket_server_metrics_connection_count', 'gauge', 'Connections open on the listener (connection-count).', (l) => socket.connections.get(l) ?? 0],
    ['kafka_server_socket_server_metrics_connection_creation_total', 'counter', 'Connections accepted on the listener since start (connection-creation-total).', (l) => m.listeners.get(l)?.created ?? 0],
    ['kafka_server_socket_server_metrics_connection_close_total', 'counter', 'Connections closed on the listener since start (connection-close-total).', (l) => m.listeners.get(l)?.closed ?? 0],
    ['kafka_server_socket_server_metrics_failed_authentication_total', 'counter', 'Failed SASL authentications on the listener (failed-authentication-total).', (l) => socket.failedAuthentications.get(l) ?? 0],
  ]
  for (const [name, type, help, value] of families) {
    w.family(name, type, help)
    for (const l of names) w.sample(name, value(l), labels(l))
  }
  w.family('kafka_network_requestchannel_requestqueuesize', 'gauge', 'Requests read and not answered yet, waiting for or in a handler (RequestQueueSize).')
  w.sample('kafka_network_requestchannel_requestqueuesize', socket.pendingRequests)
  w.family('tidelog_console_failed_logins_total', 'counter', 'Console logins refused (unknown user or wrong password) since start.')
  w.sample('tidelog_console_failed_logins_total', m.consoleLoginFailures)
  return w.text()
}
