import type { Logger } from 'pino';
import type { Seed } from '../crawl/seed/index.js';

/** What main hands a command that works on a seed's arena: the seed parsed once, the Redis chosen once. */
export interface CommandContext {
  seedPath: string;
  seed: Seed;
  /** Redis URL (may hold a password: never log it unredacted). */
  url: string;
  log: Logger;
}
