/**
 * Rewrites packages/streams/test/golden/windows-java-outputs.json and windows2-java-outputs.json from Kafka Streams' own
 * TopologyTestDriver: `node --import tsx test/streams-java/regenerate-windows.ts`. Run it after
 * changing WindowTopologies.java, MoreWindowTopologies.java or their inputs (and the TypeScript twins to match).
 */
import { writeFileSync } from 'node:fs'
import { runJavaWindows, WINDOWS2_GOLDEN, WINDOWS_GOLDEN } from './windows.js'

const { stdout, stdout2 } = await runJavaWindows()
writeFileSync(WINDOWS_GOLDEN, stdout)
writeFileSync(WINDOWS2_GOLDEN, stdout2)
console.log(`wrote ${WINDOWS_GOLDEN} and ${WINDOWS2_GOLDEN}`)
