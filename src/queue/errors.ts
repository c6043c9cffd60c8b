import { WeirError } from '../errors.js';

/**
 * The queue's error codes: the codes its Lua scripts raise (`WEIR_*` at the
 * start of an error reply) are the same ones the TypeScript side raises
 * when it rejects an argument before sending it.
 */
export const QUEUE_ERROR_CODES = [
  'WEIR_BAD_ARGS',
  'WEIR_BAD_NAME',
  'WEIR_BAD_RATE',
  'WEIR_UNKNOWN_QUEUE',
  'WEIR_ITEM_TOO_LARGE',
  'WEIR_NO_DEDUPE',
  'WEIR_DEDUPE_MISMATCH',
  'WEIR_SCHEMA',
  /** A kickoff asked for another shard count than the arena's. */
  'WEIR_SHARDS_MISMATCH',
  /** A script was called with a shard count that is not the arena's (the client re-reads the layout). */
  'WEIR_SHARDS_CHANGED',
] as const;

export type QueueErrorCode = (typeof QUEUE_ERROR_CODES)[number];

const isQueueErrorCode = (word: string): word is QueueErrorCode => (QUEUE_ERROR_CODES as readonly string[]).includes(word);

export { WeirError };

/** A call to the queue was given something it cannot take. Nothing was written. */
export class QueueArgumentError extends WeirError {
  declare readonly code: QueueErrorCode;
  constructor(code: QueueErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'QueueArgumentError';
  }
}

const SCRIPT_ERROR = /^(?:ERR )?(WEIR_[A-Z_]+) ([^\n]*?)(?: script: .*)?$/s;

/**
 * Turns an error reply from a script that starts with one of the queue's
 * codes into a typed error; other errors (another `WEIR_*` word among
 * them: not a code of this queue) pass through as they are.
 */
export function fromReplyError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const m = SCRIPT_ERROR.exec(err.message);
  if (!m?.[1] || !isQueueErrorCode(m[1])) return err;
  return new QueueArgumentError(m[1], m[2] ?? err.message, { cause: err });
}
