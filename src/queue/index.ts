export { FairQueue, DEFAULTS, LIMITS } from './queue.js';
export type {
  ArenaTotals,
  DeadItem,
  DequeueResult,
  FairQueueOptions,
  Lease,
  LeaseOutcome,
  QueueClientCounters,
  QueueFigures,
  QueueLimit,
  QueuePage,
  Rate,
  RetryOptions,
  TakeOptions,
} from './queue.js';
export { QueueArgumentError, WeirError } from './errors.js';
export type { QueueErrorCode } from './errors.js';
export { ARENA_KEY_NAMES, arenaKeys, validateArenaName } from './keys.js';
export { SCRIPT_NAMES, loadScripts } from './scripts.js';
export { sleep, sleepUntil } from './sleep.js';
