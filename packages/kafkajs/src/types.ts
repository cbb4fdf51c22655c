import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls'
import type { logCreator, logLevel } from './logger.js'

// kafkajs 2.2's public shapes (its types/index.d.ts is the reference): offsets, timestamps and
// high watermarks are decimal strings, headers are objects, keys and values are Buffers.

export interface IHeaders {
  [key: string]: Buffer | string | (Buffer | string)[] | undefined
}

export interface Message {
  key?: Buffer | string | null
  value: Buffer | string | null
  partition?: number
  headers?: IHeaders
  timestamp?: string
}

export interface PartitionMetadata {
  partitionErrorCode: number
  partitionId: number
  leader: number
  replicas: number[]
  isr: number[]
  offlineReplicas?: number[]
}

export interface RetryOptions {
  maxRetryTime?: number
  initialRetryTime?: number
  factor?: number
  multiplier?: number
  retries?: number
  restartOnFailure?: (e: Error) => Promise<boolean>
}

export interface SASLOptions {
  mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512' | 'oauthbearer' | 'aws'
  username?: string
  password?: string
  oauthBearerProvider?: () => Promise<{ value: string }>
  [key: string]: unknown
}

export type BrokersFunction = () => string[] | Promise<string[]>

export interface KafkaConfig {
  brokers: string[] | BrokersFunction
  ssl?: TlsConnectionOptions | boolean
  sasl?: SASLOptions
  clientId?: string
  connectionTimeout?: number
  authenticationTimeout?: number
  reauthenticationThreshold?: number
  requestTimeout?: number
  enforceRequestTimeout?: boolean
  retry?: RetryOptions
  logLevel?: logLevel
  logCreator?: logCreator
}

export interface KafkaMessage {
  key: Buffer | null
  value: Buffer | null
  timestamp: string
  attributes: number
  offset: string
  headers: IHeaders
  size?: never
}

export interface RecordMetadata {
  topicName: string
  partition: number
  errorCode: number
  offset?: string
  timestamp?: string
  baseOffset?: string
  logAppendTime?: string
  logStartOffset?: string
}

export interface PartitionOffset {
  partition: number
  offset: string
}
export type SeekEntry = PartitionOffset

export interface TopicOffsets {
  topic: string
  partitions: PartitionOffset[]
}

export interface Offsets {
  topics: TopicOffsets[]
}

export interface TopicPartitions {
  topic: string
  partitions: number[]
}

export interface TopicPartitionOffset {
  topic: string
  partition: number
  offset: string
}

export type TopicPartitionOffsetAndMetadata = TopicPartitionOffset & { metadata?: string | null }

export interface InstrumentationEvent<T> {
  /** A number at run time, as kafkajs 2.2.4 emits it (its typings say string). */
  id: string | number
  type: string
  timestamp: number
  payload: T
}

export type RemoveInstrumentationEventListener = () => void

export interface OffsetsByTopicPartition {
  topics: TopicOffsets[]
}
