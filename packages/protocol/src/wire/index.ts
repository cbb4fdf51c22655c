export { Writer, uvarintSize, varintSize } from './writer.js'
export { Reader } from './reader.js'
export type { TaggedField } from './types.js'
export { ZERO_UUID, uuidToBytes, uuidFromBytes, randomUuid } from './uuid.js'
