/** Reading past the end of an output topic (Java's NoSuchElementException). */
export class NoSuchElementError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'NoSuchElementError'
  }
}
