export * from './wire/index.js'
export * from './errors/index.js'
