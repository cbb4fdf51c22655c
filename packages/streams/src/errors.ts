/** Kafka Streams' base exception (org.apache.kafka.streams.errors.StreamsException). */
export class StreamsException extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'StreamsException'
  }
}

/** An invalid topology: unknown parent, duplicate name, store not connected (Java's TopologyException). */
export class TopologyException extends StreamsException {
  constructor(message: string) {
    super(`Invalid topology: ${message}`)
    this.name = 'TopologyException'
  }
}

/** A state store used after close or before init (Java's InvalidStateStoreException). */
export class InvalidStateStoreException extends StreamsException {
  constructor(message: string) {
    super(message)
    this.name = 'InvalidStateStoreException'
  }
}
