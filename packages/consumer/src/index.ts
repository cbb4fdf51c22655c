export { Consumer } from './consumer.js'
export type { SubscribeOptions, CloseOptions } from './consumer.js'
export type { ConsumerOptions, AutoOffsetReset, IsolationLevel, DeliverySemantics } from './options.js'
export type { Message, Batch, TopicPartition, TopicPartitionOffset, RebalanceListener, GroupGeneration } from './types.js'
export { NoOffsetForPartitionError, OffsetOutOfRangeError, CommitFailedError, IllegalStateError, GroupMembershipError } from './errors.js'
export { LogTruncationError } from './validator.js'
export type { ConsumerGroupMetadata } from './group-metadata.js'
export {
  rangeAssignor,
  roundRobinAssignor,
  cooperativeStickyAssignor,
  stickyAssign,
  withholdTransfers,
  compareMembers,
} from './group/assignors/index.js'
export type { Assignor, AssignmentInput, GroupMember, RebalanceProtocol } from './group/assignors/index.js'
export type { MemberState } from './group/state.js'
