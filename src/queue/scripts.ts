import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fromReplyError } from './errors.js';
import { luaLimits } from './limits.js';
import { OneWayCalls, sendEncoded, type ScriptArg } from './script-call.js';

export type { ScriptArg };
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
  'revisit',
  'fail',
  'pause',
  'pace',
  'purge',
  'sent',
  'hold',
  'dead',
  'requeueDead',
  'stats',
] as const;

export type ScriptName = (typeof SCRIPT_NAMES)[number];

/**
 * A script that is not one of the queue's (the benchmarks' no-op, which
 * weir does not ship): its name and its text, which includes "arena" as
 * theirs do, so it is called exactly as they are.
 */
export interface ExtraScript {
  readonly name: string;
  readonly text: string;
}

export interface LoadedScript {
  readonly name: string;
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

let cache: Map<string, LoadedScript> | undefined;

/** A script's own text follows this line; the includes come first (arena.lua takes in the rest). */
const ARENA_INCLUDE = '--@include "arena"';
/** What every script's call does first (arena.lua). */
const BEGIN_CALL = 'begin_call()';

/** A script's own text, its includes left to the shared part (arena.lua takes them all in). */
function bodyOf(name: string, text: string): string {
  if (!text.includes(ARENA_INCLUDE)) throw new Error(`script ${name} does not include "arena"`);
  return resolveIncludes(text.replace(ARENA_INCLUDE, ''), () => '');
}

/** The queue's scripts' texts (lua/), then any extra ones. */
const textsOf = (extra: readonly ExtraScript[]): ExtraScript[] => [...SCRIPT_NAMES.map((name) => ({ name, text: readLua(`${name}.lua`) })), ...extra];

/**
 * Reads and resolves every script once per process, as EVAL runs them: the
 * includes inlined, then the script's own text as a function, then the
 * call begun and that function run. (Its own text in a function of its
 * own, as in the library: Lua caps a function's locals at 200, and the
 * includes' locals alone come near it.)
 */
export function loadScripts(extra: readonly ExtraScript[] = []): Map<string, LoadedScript> {
  if (cache && extra.length === 0) return cache;
  const scripts = new Map<string, LoadedScript>();
  const shared = resolveIncludes(ARENA_INCLUDE);
  for (const { name, text } of textsOf(extra)) {
    const source = `${shared}\nlocal function main()\n${bodyOf(name, text)}\nend\n${BEGIN_CALL}\nreturn main()\n`;
    const sha = createHash('sha1').update(source).digest('hex');
    scripts.set(name, { name, source, sha });
  }
  if (extra.length === 0) cache = scripts;
  return scripts;
}

export interface ScriptLibrary {
  /** The library's name: weir and a hash of its text, so two versions of weir can share a Redis. */
  readonly name: string;
  /** FUNCTION LOAD's text. */
  readonly code: string;
  /** The function that runs script `name`. */
  functionOf(name: string): string;
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
export function loadLibrary(extra: readonly ExtraScript[] = []): ScriptLibrary {
  if (library && extra.length === 0) return library;
  const bodies = textsOf(extra).map(({ name, text }) => ({ name, text: bodyOf(name, text) }));
  const shared = resolveIncludes(ARENA_INCLUDE);
  const mains = bodies.map((b) => `local function main_${b.name}()\n${b.text}\nend`).join('\n');
  const hash = createHash('sha1').update(shared).update(mains).digest('hex').slice(0, 16);
  const name = `weir_${hash}`;
  const functionOf = (script: string): string => `${name}_${script}`;
  const registrations = bodies
    .map((b) => `redis.register_function('${functionOf(b.name)}', function(keys, args)\n  KEYS, ARGV = keys, args\n  ${BEGIN_CALL}\n  return main_${b.name}()\nend)`)
    .join('\n');
  const code = [`#!lua name=${name}`, 'local KEYS, ARGV = {}, {}', shared, mains, registrations, ''].join('\n');
  const made = { name, code, functionOf };
  if (extra.length === 0) library = made;
  return made;
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
export class ScriptRunner<Extra extends string = never> {
  private readonly scripts: Map<string, LoadedScript>;
  private readonly library: ScriptLibrary;
  /** Unknown until the first call tells; 'eval' on a Redis without functions. */
  private mode: 'function' | 'eval' | null = null;
  private loading: Promise<void> | null = null;
  private readonly oneWay: OneWayCalls;

  /** `extra`: scripts beside the queue's own (a benchmark's), in their own library. */
  constructor(
    private readonly client: RedisClient,
    extra: readonly (ExtraScript & { name: Extra })[] = [],
  ) {
    this.scripts = loadScripts(extra);
    this.library = loadLibrary(extra);
    this.oneWay = new OneWayCalls(client);
  }

  /**
   * Sends the call on a connection that gets no reply (script-call.ts, OneWayCalls): true
   * if sent so, false (nothing sent) when the caller must run it as usual.
   * Only once functions are known to run here: an EVALSHA whose script is
   * missing would be lost for good, where a missing function is loaded by
   * the next ordinary call.
   */
  sendOneWay(name: ScriptName | Extra, keys: readonly string[], args: readonly ScriptArg[]): boolean {
    return this.mode === 'function' && this.oneWay.send(this.library.functionOf(name), keys, args);
  }

  /** Closes what this runner opened of its own (sendOneWay's connections); the client is the caller's. */
  close(): void {
    this.oneWay.close();
  }

  async run(name: ScriptName | Extra, keys: readonly string[], args: readonly ScriptArg[]): Promise<unknown> {
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

  private fcall(name: string, keys: readonly string[], args: readonly ScriptArg[]): Promise<unknown> {
    return sendEncoded(this.client, 'FCALL', [this.library.functionOf(name), keys.length, ...keys], args);
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

  private async evalsha(name: string, keys: readonly string[], args: readonly ScriptArg[]): Promise<unknown> {
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
