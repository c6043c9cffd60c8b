import { WeirError } from '../errors.js';

/**
 * The queue's error codes: the codes its Lua scripts raise (`WEIR_*` at the
 * start of an error reply) are the same ones the TypeScript side raises
 * when it rejects an argument before sending it.
 */
export type QueueErrorCode =
  | 'WEIR_BAD_ARGS'
  | 'WEIR_BAD_NAME'
  | 'WEIR_BAD_RATE'
  | 'WEIR_UNKNOWN_QUEUE'
  | 'WEIR_ITEM_TOO_LARGE'
  | 'WEIR_NO_DEDUPE'
  | 'WEIR_DEDUPE_MISMATCH'
  | 'WEIR_SCHEMA'
  /** A kickoff asked for another shard count than the arena's. */
  | 'WEIR_SHARDS_MISMATCH'
  /** A script was called with a shard count that is not the arena's (the client re-reads the layout). */
  | 'WEIR_SHARDS_CHANGED';

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

/** Turns a `WEIR_*` error reply from a script into a typed error; other errors pass through. */
export function fromReplyError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const m = SCRIPT_ERROR.exec(err.message);
  if (!m?.[1]) return err;
  return new QueueArgumentError(m[1] as QueueErrorCode, m[2] ?? err.message, { cause: err });
}
