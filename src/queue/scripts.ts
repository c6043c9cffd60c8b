import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fromReplyError } from './errors.js';
import { luaLimits } from './limits.js';
import type { RedisClient } from './types.js';

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
  'sent',
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

/** A script's own text follows this line; the includes come first (arena.lua takes in the rest). */
const ARENA_INCLUDE = '--@include "arena"';
/** What every script's call does first (arena.lua). */
const BEGIN_CALL = 'begin_call()';

/** A script's own text, its includes left to the shared part (arena.lua takes them all in). */
function scriptBody(name: ScriptName): string {
  const text = readLua(`${name}.lua`);
  if (!text.includes(ARENA_INCLUDE)) throw new Error(`lua/${name}.lua does not include "arena"`);
  return resolveIncludes(text.replace(ARENA_INCLUDE, ''), () => '');
}

/**
 * Reads and resolves every script once per process, as EVAL runs them: the
 * includes inlined, then the script's own text as a function, then the
 * call begun and that function run. (Its own text in a function of its
 * own, as in the library: Lua caps a function's locals at 200, and the
 * includes' locals alone come near it.)
 */
export function loadScripts(): Map<ScriptName, LoadedScript> {
  if (cache) return cache;
  const scripts = new Map<ScriptName, LoadedScript>();
  const shared = resolveIncludes(ARENA_INCLUDE);
  for (const name of SCRIPT_NAMES) {
    const source = `${shared}\nlocal function main()\n${scriptBody(name)}\nend\n${BEGIN_CALL}\nreturn main()\n`;
    const sha = createHash('sha1').update(source).digest('hex');
    scripts.set(name, { name, source, sha });
  }
  cache = scripts;
  return scripts;
}

export interface ScriptLibrary {
  /** The library's name: weir and a hash of its text, so two versions of weir can share a Redis. */
  readonly name: string;
  /** FUNCTION LOAD's text. */
  readonly code: string;
  /** The function that runs script `name`. */
  functionOf(name: ScriptName): string;
}

let library: ScriptLibrary | undefined;

/**
 * Every script as one Redis function library (Redis ≥ 7.0): the includes
 * once, at the library's top, so their functions and tables are made once
 * when the library loads rather than on every call (as EVAL must), and
 * each script's text as the body of its function. A
 * call binds its KEYS and ARGV to the library's own locals, which the
 * includes read, and begins afresh (begin_call).
 */
export function loadLibrary(): ScriptLibrary {
  if (library) return library;
  const bodies = SCRIPT_NAMES.map((name) => ({ name, text: scriptBody(name) }));
  const shared = resolveIncludes(ARENA_INCLUDE);
  const mains = bodies.map((b) => `local function main_${b.name}()\n${b.text}\nend`).join('\n');
  const hash = createHash('sha1').update(shared).update(mains).digest('hex').slice(0, 16);
  const name = `weir_${hash}`;
  const functionOf = (script: ScriptName): string => `${name}_${script}`;
  const registrations = bodies
    .map((b) => `redis.register_function('${functionOf(b.name)}', function(keys, args)\n  KEYS, ARGV = keys, args\n  ${BEGIN_CALL}\n  return main_${b.name}()\nend)`)
    .join('\n');
  const code = [`#!lua name=${name}`, 'local KEYS, ARGV = {}, {}', shared, mains, registrations, ''].join('\n');
  library = { name, code, functionOf };
  return library;
}

const isFunctionMissing = (err: unknown): boolean => err instanceof Error && err.message.startsWith('ERR Function not found');
/**
 * No functions here: Redis before 7.0 (unknown command), or a user whose
 * ACL allows scripts but not FCALL or FUNCTION LOAD. The scripts run by
 * EVALSHA there.
 */
const isFunctionUnavailable = (err: unknown): boolean =>
  err instanceof Error && (/^ERR unknown command .?fcall/i.test(err.message) || /^NOPERM .*'(fcall|function\|load)'/i.test(err.message));

/**
 * Runs the scripts. On Redis ≥ 7.0 as functions of one library (FCALL):
 * a server without the library (fresh, restarted without persistence,
 * flushed, or a Cluster master that never had it) gets it on the first
 * call that misses it (FUNCTION LOAD, on every master of a Cluster), and
 * the call goes again. On an older Redis by SHA, each script sent once with
 * EVAL on NOSCRIPT, which also caches it server-side.
 */
export class ScriptRunner {
  private readonly scripts = loadScripts();
  private readonly library = loadLibrary();
  /** Unknown until the first call tells; 'eval' on a Redis without functions. */
  private mode: 'function' | 'eval' | null = null;
  private loading: Promise<void> | null = null;

  constructor(private readonly client: RedisClient) {}

  async run(name: ScriptName, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    if (this.mode !== 'eval') {
      try {
        const out = await this.fcall(name, keys, args);
        this.mode = 'function';
        return out;
      } catch (err) {
        if (isFunctionMissing(err)) {
          try {
            await this.load();
            return await this.fcall(name, keys, args);
          } catch (err2) {
            if (!isFunctionUnavailable(err2)) throw fromReplyError(err2);
          }
        } else if (!isFunctionUnavailable(err)) {
          throw fromReplyError(err);
        }
        this.mode = 'eval';
      }
    }
    return this.evalsha(name, keys, args);
  }

  private fcall(name: ScriptName, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    return this.client.call('FCALL', this.library.functionOf(name), keys.length, ...keys, ...args);
  }

  /** FUNCTION LOAD on the server (every master of a Cluster); concurrent misses wait for one load. */
  private async load(): Promise<void> {
    this.loading ??= (async () => {
      const nodes = 'nodes' in this.client ? this.client.nodes('master') : [this.client];
      await Promise.all(nodes.map((n) => n.call('FUNCTION', 'LOAD', 'REPLACE', this.library.code)));
    })().finally(() => {
      this.loading = null;
    });
    await this.loading;
  }

  private async evalsha(name: ScriptName, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
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
