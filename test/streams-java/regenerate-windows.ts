/**
 * Rewrites packages/streams/test/golden/windows-java-outputs.json from Kafka Streams' own
 * TopologyTestDriver: `node --import tsx test/streams-java/regenerate-windows.ts`. Run it after
 * changing WindowTopologies.java or golden/windows-inputs.json (and windows-topologies.ts to match).
 */
import { writeFileSync } from 'node:fs'
import { runJavaWindows, WINDOWS_GOLDEN } from './windows.js'

const { stdout } = await runJavaWindows()
writeFileSync(WINDOWS_GOLDEN, stdout)
console.log(`wrote ${WINDOWS_GOLDEN}`)
