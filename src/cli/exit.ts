import { isWeirError } from '../errors.js';

/** Documented exit codes. */
export const EXIT = { ok: 0, failure: 1, usage: 2, redis: 3, sigint: 130, sigterm: 143 } as const;

const PARSE_ARGS_CODES = new Set(['ERR_PARSE_ARGS_UNKNOWN_OPTION', 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE', 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL']);

/** The exit code for an error that ended a command. */
export function exitCodeOf(err: unknown): number {
  if (isWeirError(err, 'WEIR_SEED') || isWeirError(err, 'WEIR_USAGE')) return EXIT.usage;
  if (PARSE_ARGS_CODES.has(String((err as { code?: unknown } | null)?.code))) return EXIT.usage;
  if (isWeirError(err, 'WEIR_REDIS_UNREACHABLE')) return EXIT.redis;
  return EXIT.failure;
}
