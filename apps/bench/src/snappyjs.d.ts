// snappyjs ships no type declarations; the part the benchmark uses.
declare module 'snappyjs' {
  const snappyjs: { compress(data: Buffer): Buffer; uncompress(data: Buffer): Buffer }
  export default snappyjs
}
