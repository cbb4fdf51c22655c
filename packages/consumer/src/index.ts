export { Consumer } from './consumer.js'
export type { SubscribeOptions, CloseOptions } from './consumer.js'
export type { ConsumerOptions, AutoOffsetReset, IsolationLevel, DeliverySemantics } from './options.js'
export type { Message, Batch, TopicPartition, TopicPartitionOffset, RebalanceListener, GroupGeneration } from './types.js'
export { NoOffsetForPartitionError, OffsetOutOfRangeError, CommitFailedError, IllegalStateError, GroupMembershipError, HandlerFailedError, RecordDeserializationError } from './errors.js'
export type { RunOptions, EachMessagePayload, EachBatchPayload, HandlerErrorPolicy, RunRetryOptions } from './runner/types.js'
export type { DeserializationErrorPolicy } from './serdes.js'
export type { OffsetForTime, LookupOptions } from './offsets-api.js'
export { serdes } from '@tidelog/client'
export type { Serde, Serializer, Deserializer, SerdeContext } from '@tidelog/client'
export { LogTruncationError } from './validator.js'
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
