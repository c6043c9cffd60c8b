/** The Lua loader: includes inlined once each, limits generated from the one TypeScript source. */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { LIMITS } from '../../src/queue/index.js';
import { loadScripts, SCRIPT_NAMES } from '../../src/queue/internal.js';
import { luaLimits } from '../../src/queue/limits.js';
import { resolveIncludes } from '../../src/queue/scripts.js';

const LUA = new URL('../../lua/', import.meta.url);

describe('Lua scripts', () => {
  it('each include is inlined once, dependencies first; a cycle is an error', () => {
    const files: Record<string, string> = {
      a: '--@include "b"\n--@include "c"\nA',
      b: '--@include "c"\nB',
      c: 'C',
      loop1: '--@include "loop2"',
      loop2: '--@include "loop1"',
    };
    const read = (n: string): string => files[n] ?? assert.fail(n);
    const out = resolveIncludes('--@include "a"\n--@include "c"\nMAIN', read);
    assert.equal(out.match(/^C$/gm)?.length, 1);
    assert.ok(out.indexOf('C') < out.indexOf('B') && out.indexOf('B') < out.indexOf('A') && out.indexOf('A') < out.indexOf('MAIN'));
    assert.throws(() => resolveIncludes('--@include "loop1"', read), /cycle: loop1 -> loop2 -> loop1/);
  });

  it('every script carries the limits of src/queue/limits.ts, and no limit is written as a number in lua/', () => {
    for (const [name, s] of loadScripts()) {
      assert.ok(s.source.includes(luaLimits()), `${name} has the generated limits`);
      assert.equal(s.source.match(/^local MAX_ITEM_BYTES = /gm)?.length, 1, `${name}: limits once`);
      assert.ok(!/--@include|--@limits/.test(s.source), `${name}: every directive resolved`);
    }
    assert.equal(loadScripts().size, SCRIPT_NAMES.length);
    // (1,000,000 is also µs per second, so maxInFlight is not looked for.)
    const written = new Set([LIMITS.maxLeaseMs, LIMITS.maxDelayMs, LIMITS.maxRate, LIMITS.maxDedupeBits, LIMITS.maxItemBytes].map(String));
    for (const dir of ['', 'includes/']) {
      for (const f of readdirSync(new URL(dir, LUA)).filter((n) => n.endsWith('.lua'))) {
        const text = readFileSync(new URL(dir + f, LUA), 'utf8');
        for (const n of text.match(/\b\d{5,}\b/g) ?? []) assert.ok(!written.has(n), `lua/${dir}${f} writes the limit ${n} by hand`);
      }
    }
  });
});
