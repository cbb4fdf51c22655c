import snappyjs from 'snappyjs'
import kafkajsPackage from 'kafkajs'
import { kafkajsApiAdapter } from './kafkajs-api.js'

// kafkajs is CommonJS; its codec table is only reachable through the default export.
const { CompressionCodecs, CompressionTypes } = kafkajsPackage

// kafkajs ships no snappy codec; its users register one. snappyjs is the pure-JS one
// (kafkajs-snappy would need a native build); tidelog's snappy is its own implementation.
CompressionCodecs[CompressionTypes.Snappy] = () => ({
  compress: async (encoder: { buffer: Buffer }) => snappyjs.compress(encoder.buffer),
  decompress: async (buffer: Buffer) => snappyjs.uncompress(buffer),
})

export const kafkajs = kafkajsApiAdapter(kafkajsPackage, 'kafkajs-bench')
