/**
 * What tests and benchmarks reach into and a library user does not need:
 * the script runner and loader, the key names, shard placement, the clock.
 * Not part of `weir/queue`; lint allows it to test/ and bench/ only.
 */
export { ARENA_KEY_NAMES, arenaKeys } from './keys.js';
export { shardOf } from './shards.js';
export { SHARDS_PER_MASTER } from './layouts.js';
export { SCRIPT_NAMES, ScriptRunner, loadScripts, type ExtraScript } from './scripts.js';
export { RedisClock } from './clock.js';
