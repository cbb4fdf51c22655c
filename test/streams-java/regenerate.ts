/**
 * Rewrites packages/streams/test/golden/java-outputs.json from Kafka Streams' own
 * TopologyTestDriver: `node --import tsx test/streams-java/regenerate.ts`. Run it after changing
 * GoldenTopologies.java or golden/inputs.json (and change golden-topologies.ts to match), or
 * JoinTopologies.java or golden/joins-inputs.json (and join-topologies.ts).
 */
import { writeFileSync } from 'node:fs'
import { GOLDEN, JOIN_GOLDEN, runJavaGolden, runJavaJoinGolden } from './golden.js'

const { stdout } = await runJavaGolden()
writeFileSync(GOLDEN, stdout)
console.log(`wrote ${GOLDEN}`)
const joins = await runJavaJoinGolden()
writeFileSync(JOIN_GOLDEN, joins.stdout)
console.log(`wrote ${JOIN_GOLDEN}`)
