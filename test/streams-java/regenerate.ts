/**
 * Rewrites packages/streams/test/golden/java-outputs.json from Kafka Streams' own
 * TopologyTestDriver: `node --import tsx test/streams-java/regenerate.ts`. Run it after changing
 * GoldenTopologies.java or golden/inputs.json (and change golden-topologies.ts to match).
 */
import { writeFileSync } from 'node:fs'
import { GOLDEN, runJavaGolden } from './golden.js'

const { stdout } = await runJavaGolden()
writeFileSync(GOLDEN, stdout)
console.log(`wrote ${GOLDEN}`)
