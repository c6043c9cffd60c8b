/**
 * The queue's public API: the only file of src/queue that code outside it
 * may import (the lint rule in eslint.config.js enforces it).
 */
export { FairQueue } from './queue.js';
export { DEFAULTS, LIMITS } from './limits.js';
export type {
  ArenaStats,
  DeadItem,
  DequeueResult,
  FairQueueOptions,
  Lease,
  LeaseOutcome,
  QueueClientCounters,
  QueueLimit,
  QueuePage,
  QueueStats,
  Rate,
  RetryOptions,
  TakeOptions,
  DequeueOptions,
} from './types.js';
export { QueueArgumentError } from './errors.js';
export type { QueueErrorCode } from './errors.js';
export { ARENA_KEY_NAMES, arenaKeys, validateArenaName } from './keys.js';
export { shardOf, type ShardLayout } from './shards.js';
export { SHARDS_PER_MASTER } from './layouts.js';
export { SCRIPT_NAMES, ScriptRunner, loadScripts } from './scripts.js';
export { RedisClock } from './clock.js';
export { sleep, sleepUntil } from './sleep.js';
