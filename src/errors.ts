/**
 * weir's errors: one base class and one list of stable codes for the whole
 * package. A leaf module (it imports nothing), so every layer may use it:
 * the queue, the crawler and the command line.
 *
 * A code never changes meaning once released; callers branch on `code`,
 * never on a message.
 */
export const ERROR_CODES = {
  // The queue (also raised by its Lua scripts, as the first word of an error reply).
  WEIR_BAD_ARGS: 'a queue call was given arguments it cannot take; nothing was written',
  WEIR_BAD_NAME: 'an arena or queue name is not allowed',
  WEIR_BAD_RATE: 'a rate is outside what the queue can keep',
  WEIR_UNKNOWN_QUEUE: 'the queue has no limits set',
  WEIR_ITEM_TOO_LARGE: 'an item is over the size limit',
  WEIR_NO_DEDUPE: 'the arena has no dedupe bitmap',
  WEIR_DEDUPE_MISMATCH: 'the arena has a dedupe bitmap of another size',
  WEIR_SCHEMA: 'the arena was written with another key-schema version',
  WEIR_SHARDS_MISMATCH: 'the arena has another shard count than was asked for (fixed at its first kickoff)',
  WEIR_SHARDS_CHANGED: 'a call was made with a shard count that is not the arena\'s (the client re-reads its layout)',
  // Seeds, the command line, Redis.
  WEIR_SEED: 'a seed file cannot be used; the message names the field',
  WEIR_USAGE: 'the command line is wrong',
  WEIR_REDIS_UNREACHABLE: 'Redis could not be reached',
  WEIR_ARENA_BUSY: 'another crawl is driving this arena',
  WEIR_EMBEDDED_REDIS: 'the embedded redis-server could not be started or found',
  // Fetching (FetchError).
  WEIR_PRIVATE_ADDRESS: 'the address is private, loopback or link-local and allowPrivateNetworks is off',
  WEIR_TIMEOUT: 'the request did not finish within its deadline',
  WEIR_BAD_ENCODING: 'the body could not be decoded (unsupported or corrupt content-encoding)',
  WEIR_DNS: 'the host name could not be resolved',
  WEIR_CONNECT: 'the connection was refused or could not be made',
  WEIR_RESET: 'the connection was reset or closed mid-response',
  WEIR_TLS: 'the TLS handshake or certificate failed',
  WEIR_PROTOCOL: 'the server sent something that is not HTTP',
  WEIR_NETWORK: 'another network failure',
  WEIR_LATE: 'a request was not sent: it would have left too late for its rate slot',
  // Keeping the pages.
  WEIR_WARC: 'a WARC file could not be created or written',
  WEIR_OUTPUT: 'the output file could not be opened (a symbolic link is refused)',
  // Watching.
  WEIR_STATUS_PAGE: 'the status page could not listen on its address',
  WEIR_METRICS: 'the metrics endpoint could not listen on its address',
  WEIR_CLUSTER_NODE: 'a Redis Cluster node is not in the allowed list: no connection (nor credentials) goes to it',
} as const;

export type WeirErrorCode = keyof typeof ERROR_CODES;

/**
 * Every WeirError carries this (a registered symbol, as undici brands its
 * errors), so isWeirError knows one made by another installed copy of weir,
 * which `instanceof` would not.
 */
const BRAND = Symbol.for('weir.WeirError');

export class WeirError extends Error {
  readonly code: WeirErrorCode;
  constructor(code: WeirErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WeirError';
    this.code = code;
    Object.defineProperty(this, BRAND, { value: true });
  }
}

/** Whether `code` is one of ERROR_CODES. */
export const isWeirErrorCode = (code: unknown): code is WeirErrorCode => typeof code === 'string' && Object.hasOwn(ERROR_CODES, code);

/** A WeirError (of this copy of weir or another), with `code` if given. */
export function isWeirError(err: unknown, code?: WeirErrorCode): err is WeirError {
  if (typeof err !== 'object' || err === null || (err as Record<symbol, unknown>)[BRAND] !== true) return false;
  const c = (err as { code?: unknown }).code;
  return isWeirErrorCode(c) && (code === undefined || c === code);
}
