export * from './base.js'
