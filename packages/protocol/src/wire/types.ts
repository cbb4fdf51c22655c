/**
 * A tagged field (KIP-482) that the decoder did not recognise. It is kept so a
 * message decoded and re-encoded by this version round-trips unchanged.
 */
export interface TaggedField {
  tag: number
  data: Uint8Array
}
