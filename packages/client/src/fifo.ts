/**
 * A queue with O(1) push and shift that does not shift an array on every response: the head
 * index moves, and the backing array is compacted only when its dead prefix dominates.
 */
export class Fifo<T> {
  private items: (T | undefined)[] = []
  private head = 0

  get length(): number {
    return this.items.length - this.head
  }

  push(item: T): void {
    this.items.push(item)
  }

  peek(): T | undefined {
    return this.items[this.head]
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined
    const item = this.items[this.head]
    this.items[this.head++] = undefined
    if (this.head === this.items.length) {
      this.items.length = 0
      this.head = 0
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return item
  }

  /** Empties the queue, returning what it held in order. */
  drain(): T[] {
    const out = this.items.slice(this.head) as T[]
    this.items = []
    this.head = 0
    return out
  }

  /** Visits the live items in order. */
  forEach(fn: (item: T) => void): void {
    for (let i = this.head; i < this.items.length; i++) fn(this.items[i] as T)
  }
}
