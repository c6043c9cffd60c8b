/**
 * The no-op script: what every script does on entry and nothing else, called
 * exactly as the queue's own are (the same keys, the library or EVALSHA).
 * The benchmarks' ceiling and a few tests' probe; weir does not ship it.
 */
import { readFileSync } from 'node:fs';
import type { RedisClient } from '../../src/queue/index.js';
import { ScriptRunner, type ExtraScript } from '../../src/queue/internal.js';

export const NOOP: ExtraScript & { name: 'noop' } = { name: 'noop', text: readFileSync(new URL('./noop.lua', import.meta.url), 'utf8') };

/** A script runner that also runs 'noop'. */
export const noopRunner = (client: RedisClient): ScriptRunner<'noop'> => new ScriptRunner(client, [NOOP]);
