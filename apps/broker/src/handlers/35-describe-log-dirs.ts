import { statfs } from 'node:fs/promises'
import { DescribeLogDirs, ErrorCodes, type DescribeLogDirsResponseTopic } from '@tidelog/protocol'
import { defineHandler } from './types.js'

/**
 * DescribeLogDirs 1-4: the one data directory, each partition's size on disk (offset
 * lag 0 and isFutureKey false: there is no replica being moved between directories),
 * and from v4 the file system's total and usable bytes (KIP-827). An offline directory
 * answers KAFKA_STORAGE_ERROR with no partitions, as Kafka reports a failed log dir.
 * Asked-for topics or partitions this broker does not host are left out, as Kafka does.
 */
export const describeLogDirsHandler = defineHandler({
  api: DescribeLogDirs,
  minVersion: 1,
  maxVersion: 4,
  async handle(ctx, req) {
    const { logs, topics } = ctx.broker
    const logDir = logs.dataDir
    if (logs.dirState.offline) {
      return { throttleTimeMs: 0, errorCode: ErrorCodes.NONE, results: [{ errorCode: ErrorCodes.KAFKA_STORAGE_ERROR, logDir, topics: [], totalBytes: -1n, usableBytes: -1n }] }
    }
    const wanted = req.topics === null ? undefined : new Map(req.topics.map((t) => [t.topic, new Set(t.partitions)]))
    const out: DescribeLogDirsResponseTopic[] = []
    for (const topic of topics.all()) {
      const only = wanted?.get(topic.name)
      if (wanted !== undefined && only === undefined) continue
      const partitions = topic.logs
        .filter((log) => only === undefined || only.has(log.partition))
        .map((log) => ({ partitionIndex: log.partition, partitionSize: BigInt(log.size), offsetLag: 0n, isFutureKey: false }))
      if (partitions.length > 0) out.push({ name: topic.name, partitions })
    }
    let totalBytes = -1n
    let usableBytes = -1n
    if (ctx.version >= 4) {
      try {
        const s = await statfs(logDir, { bigint: true })
        totalBytes = s.blocks * s.bsize
        usableBytes = s.bavail * s.bsize
      } catch {
        // Kafka reports -1 when the file store cannot be read; the partitions are still listed.
      }
    }
    return { throttleTimeMs: 0, errorCode: ErrorCodes.NONE, results: [{ errorCode: ErrorCodes.NONE, logDir, topics: out, totalBytes, usableBytes }] }
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, results: [] }
  },
})
