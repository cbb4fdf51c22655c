import { ExpositionWriter } from '../../metrics/exposition.js'
import type { TlsStatus } from '../tls.js'

/**
 * Certificate reloads and the expiry of the certificate in use, for alerts before it runs out
 * (Kafka has no such metric; the names are ours). Nothing without a TLS listener.
 */
export function renderTlsMetrics(status: TlsStatus | undefined): string {
  if (status === undefined) return ''
  const w = new ExpositionWriter()
  w.family('tidelog_tls_certificate_reloads_total', 'counter', 'Changed keystore or truststore files put in use (success) or refused and logged (failure), since start.')
  w.sample('tidelog_tls_certificate_reloads_total', status.reloads, { result: 'success' })
  w.sample('tidelog_tls_certificate_reloads_total', status.failedReloads, { result: 'failure' })
  if (status.certificate !== undefined) {
    w.family('tidelog_tls_certificate_expiry_timestamp_seconds', 'gauge', "The served certificate's notAfter, Unix seconds.")
    w.sample('tidelog_tls_certificate_expiry_timestamp_seconds', Math.floor(Date.parse(status.certificate.validTo) / 1000), { serial: status.certificate.serialNumber })
  }
  return w.text()
}
