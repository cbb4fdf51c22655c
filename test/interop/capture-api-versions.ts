/**
 * Captures ApiVersions v0-v4 as an Apache Kafka release answers it, into the protocol
 * package's golden fixtures (packages/protocol/test/golden/kafka/<version>/), in the same
 * format test/interop/codec-kafka.test.ts writes under TIDELOG_UPDATE_GOLDEN=1. The broker
 * presents as the release captured here (test/broker-release-coherence.test.ts), which is
 * not one codec-kafka.test.ts runs against (4.0: the first release with Produce v12 and
 * EndTxn v5, KIP-890).
 *
 * Run: npx tsx test/interop/capture-api-versions.ts 4.0.2
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { ApiKeys, type ApiVersionsResponse } from '@tidelog/protocol'
import { startKafka } from '../helpers/kafka.js'
import { RawClient } from '../helpers/raw-client.js'

const version = process.argv[2]
if (!version || !/^\d+\.\d+\.\d+$/.test(version)) throw new Error('usage: capture-api-versions.ts <kafka version, e.g. 4.0.2>')
const dir = fileURLToPath(new URL(`../../packages/protocol/test/golden/kafka/${version}/`, import.meta.url))

const kafka = await startKafka({ version })
try {
  const client = await RawClient.connect(kafka.host, kafka.port)
  mkdirSync(dir, { recursive: true })
  for (let v = 0; v <= 4; v++) {
    const req = v >= 3 ? { clientSoftwareName: 'tidelog-test', clientSoftwareVersion: '0.0.1' } : {}
    const { body, raw } = await client.request<ApiVersionsResponse>(ApiKeys.ApiVersions, v, req)
    if (body.errorCode !== 0) throw new Error(`ApiVersions v${v}: error ${body.errorCode}`)
    const note = `# ApiVersions response v${v}, body only (after the response header), sent by Apache Kafka ${kafka.runtimeVersion} (single-node KRaft) to test/interop/capture-api-versions.ts\n`
    writeFileSync(`${dir}ApiVersions-v${v}-response.hex`, note + raw.toString('hex').replace(/(.{128})/g, '$1\n') + '\n')
  }
  client.close()
  console.log(`captured ApiVersions v0-v4 of Apache Kafka ${kafka.runtimeVersion} into ${dir}`)
} finally {
  await kafka.stop()
}
