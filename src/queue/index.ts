/**
 * The queue's public API (`weir/queue`): the only file of src/queue that
 * code outside it may import (the lint rule in eslint.config.js enforces
 * it). What only tests and benchmarks need is in internal.ts.
 */
export { FairQueue } from './queue.js';
export { DEFAULTS, holdsForReport, LIMITS } from './limits.js';
export { EncodedCommand, sendEncoded } from './script-call.js';
export type {
  ArenaStats,
  DeadItem,
  EnqueueOptions,
  DequeueResult,
  FairQueueOptions,
  FloorRequest,
  Lease,
  LeaseOutcome,
  PaceReport,
  QueueClientCounters,
  QueueLimit,
  QueuePage,
  QueueStats,
  Rate,
  RedisClient,
  RetryOptions,
  TakeOptions,
  DequeueOptions,
} from './types.js';
export { QueueArgumentError } from './errors.js';
export type { QueueErrorCode } from './errors.js';
export { validateArenaName } from './keys.js';
export type { ShardLayout } from './shards.js';
