import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Cluster, Redis } from 'ioredis';
import { fromReplyError } from './errors.js';
import { luaLimits } from './limits.js';

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
const DIRECTIVE = /^--@(include "([a-zA-Z0-9_-]+)"|limits)$/gm;
/** Includes may include others; deeper than this is a mistake (a cycle is caught sooner). */
const MAX_INCLUDE_DEPTH = 8;

function readLua(relative: string): string {
  return readFileSync(new URL(relative, LUA_DIR), 'utf8');
}

/**
 * Inlines `--@include "name"` lines (files in lua/includes/), each include
 * once per script however many files ask for it (the first asker gets it,
 * so an include's own includes come before it), and `--@limits` as the
 * generated limit constants (src/queue/limits.ts).
 */
export function resolveIncludes(source: string, read: (name: string) => string = (n) => readLua(`includes/${n}.lua`)): string {
  const done = new Set<string>();
  const expand = (text: string, depth: number, chain: string[]): string =>
    text.replace(DIRECTIVE, (_line, _all: string, name: string | undefined) => {
      if (name === undefined) return luaLimits();
      if (chain.includes(name)) throw new Error(`lua include cycle: ${[...chain, name].join(' -> ')}`);
      if (done.has(name)) return `-- (${name}: included above)`;
      if (depth >= MAX_INCLUDE_DEPTH) throw new Error(`lua includes nest deeper than ${MAX_INCLUDE_DEPTH} at ${name}`);
      done.add(name);
      return expand(read(name), depth + 1, [...chain, name]);
    });
  return expand(source, 0, []);
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
