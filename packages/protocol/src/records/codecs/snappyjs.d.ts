// snappyjs ships no type declarations; this is the part of its API we use.
declare module 'snappyjs' {
  function compress(data: Buffer): Buffer
  function compress(data: Uint8Array): Uint8Array
  function uncompress(data: Uint8Array, maxLength?: number): Uint8Array
  const snappyjs: { compress: typeof compress; uncompress: typeof uncompress }
  export default snappyjs
}
