import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Cluster, Redis } from 'ioredis';
import { fromReplyError } from './errors.js';

/** The queue's commands, one Lua file each in lua/. */
export const SCRIPT_NAMES = [
  'setLimits',
  'configureDedupe',
  'enqueue',
  'dequeue',
  'commit',
  'extend',
  'release',
  'retry',
  'fail',
  'pause',
  'hold',
  'dead',
  'requeueDead',
  'stats',
  'noop',
] as const;

export type ScriptName = (typeof SCRIPT_NAMES)[number];

export interface LoadedScript {
  readonly name: ScriptName;
  readonly source: string;
  readonly sha: string;
}

const LUA_DIR = new URL('../../lua/', import.meta.url);
const INCLUDE = /^--@include "([a-zA-Z0-9_-]+)"$/m;

function readLua(relative: string): string {
  return readFileSync(new URL(relative, LUA_DIR), 'utf8');
}

/** Inlines `--@include "name"` lines (from lua/includes/), one level deep. */
export function resolveIncludes(source: string): string {
  let out = source;
  for (let i = 0; i < 8; i++) {
    const m = INCLUDE.exec(out);
    if (!m?.[1]) return out;
    out = out.replace(m[0], readLua(`includes/${m[1]}.lua`));
  }
  throw new Error('lua include nesting is deeper than 8');
}

let cache: Map<ScriptName, LoadedScript> | undefined;

/** Reads and resolves every script once per process. */
export function loadScripts(): Map<ScriptName, LoadedScript> {
  if (cache) return cache;
  const scripts = new Map<ScriptName, LoadedScript>();
  for (const name of SCRIPT_NAMES) {
    const source = resolveIncludes(readLua(`${name}.lua`));
    const sha = createHash('sha1').update(source).digest('hex');
    scripts.set(name, { name, source, sha });
  }
  cache = scripts;
  return scripts;
}

/**
 * Calls scripts by SHA. On NOSCRIPT (a fresh, restarted or flushed server)
 * it sends the source once with EVAL, which also caches it server-side, so
 * the next call by SHA succeeds again.
 */
export class ScriptRunner {
  private readonly scripts = loadScripts();
  constructor(private readonly client: Redis | Cluster) {}

  async run(name: ScriptName, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    const script = this.scripts.get(name);
    if (!script) throw new Error(`unknown script ${name}`);
    try {
      return await this.client.evalsha(script.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
        try {
          return await this.client.eval(script.source, keys.length, ...keys, ...args);
        } catch (err2) {
          throw fromReplyError(err2);
        }
      }
      throw fromReplyError(err);
    }
  }
}
