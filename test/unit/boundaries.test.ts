/**
 * The layers' boundaries are enforced by the linter (eslint.config.js):
 * each rule fails on a forbidden import and passes the allowed one. The
 * imports are linted as the text of real files of each layer.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { ESLint } from 'eslint';

const ROOT = new URL('../../', import.meta.url).pathname;
const eslint = new ESLint({ cwd: ROOT });

async function importProblems(file: string, from: string): Promise<string[]> {
  const [r] = await eslint.lintText(`import * as probe from '${from}';\nexport const used = probe;\n`, { filePath: `${ROOT}${file}` });
  return (r?.messages ?? []).map((m) => `${m.ruleId ?? 'parse'}: ${m.message}`);
}

describe('layer boundaries (lint)', () => {
  it('src/queue imports nothing outside src/queue but the error module', async () => {
    assert.match((await importProblems('src/queue/limits.ts', '../crawl/keys.js')).join('\n'), /no-restricted-imports: .*src\/queue knows nothing outside/);
    assert.match((await importProblems('src/queue/limits.ts', '../cli/main.js')).join('\n'), /no-restricted-imports/);
    assert.deepEqual(await importProblems('src/queue/limits.ts', '../errors.js'), []);
    assert.deepEqual(await importProblems('src/queue/limits.ts', '../sleep.js'), []);
    assert.deepEqual(await importProblems('src/queue/limits.ts', './limits.js'), []);
  });

  it('src/crawl imports neither the command line nor a queue file other than its index', async () => {
    for (const file of ['src/crawl/worker.ts', 'src/crawl/links/scope.ts']) {
      const up = file.split('/').length === 3 ? '../' : '../../';
      assert.match((await importProblems(file, `${up}cli/main.js`)).join('\n'), /the crawler knows nothing of the command line/);
      assert.match((await importProblems(file, `${up}cli.js`)).join('\n'), /the crawler knows nothing of the command line/);
      assert.match((await importProblems(file, `${up}queue/limits.js`)).join('\n'), /through src\/queue\/index\.ts only/);
      assert.deepEqual(await importProblems(file, `${up}queue/index.js`), []);
    }
  });

  it('outside src/queue, src/ uses the queue through its index; internal.ts is for test/ and bench/', async () => {
    assert.match((await importProblems('src/cli/main.ts', '../queue/internal.js')).join('\n'), /internal\.ts is for test\/ and bench\//);
    assert.match((await importProblems('src/index.ts', './queue/scripts.js')).join('\n'), /through src\/queue\/index\.ts only/);
    assert.match((await importProblems('src/crawl/worker.ts', '../queue/internal.js')).join('\n'), /through src\/queue\/index\.ts only/);
    assert.deepEqual(await importProblems('test/queue/scripts.test.ts', '../../src/queue/internal.js'), []);
    assert.deepEqual(await importProblems('bench/queue.ts', '../src/queue/internal.js'), []);
  });

  it("src/crawl's concern folders are used from outside through their index only", async () => {
    assert.match((await importProblems('src/crawl/worker.ts', './robots/cache.js')).join('\n'), /src\/crawl\/robots\/ is used through its index\.ts/);
    assert.match((await importProblems('src/crawl/robots/slot.ts', '../lease/pacer.js')).join('\n'), /src\/crawl\/lease\/ is used through its index\.ts/);
    assert.match((await importProblems('src/status/view.ts', '../crawl/counters/stats.js')).join('\n'), /src\/crawl\/counters\/ is used through its index\.ts/);
    assert.deepEqual(await importProblems('src/crawl/worker.ts', './robots/index.js'), []);
    assert.deepEqual(await importProblems('src/crawl/robots/slot.ts', '../lease/index.js'), []);
    // Inside a folder, its files import each other directly.
    assert.deepEqual(await importProblems('src/crawl/robots/slot.ts', './cache.js'), []);
  });

  it('src/status imports neither the command line nor a queue file other than its index', async () => {
    assert.match((await importProblems('src/status/view.ts', '../cli/main.js')).join('\n'), /the status page knows nothing of the command line/);
    assert.match((await importProblems('src/status/view.ts', '../queue/limits.js')).join('\n'), /through src\/queue\/index\.ts only/);
    assert.deepEqual(await importProblems('src/status/view.ts', '../crawl/counters/index.js'), []);
  });

  it('src has no import cycle (a cycle of modules is one module split across files)', () => {
    const src = join(ROOT, 'src');
    const files = (readdirSync(src, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts')).map((f) => join(src, f));
    const edges = new Map<string, string[]>();
    for (const file of files) {
      const specs = [...readFileSync(file, 'utf8').matchAll(/^(?:import|export)[^;]*?from '(\.{1,2}\/[^']+)';/gms)].map((m) => m[1] as string);
      edges.set(file, specs.map((s) => normalize(join(dirname(file), s.replace(/\.js$/, '.ts')))));
    }
    const state = new Map<string, 'open' | 'done'>();
    const path: string[] = [];
    const cycles: string[] = [];
    const visit = (f: string): void => {
      state.set(f, 'open');
      path.push(f);
      for (const g of edges.get(f) ?? []) {
        if (state.get(g) === 'open') cycles.push([...path.slice(path.indexOf(g)), g].map((x) => relative(src, x)).join(' → '));
        else if (!state.has(g)) visit(g);
      }
      path.pop();
      state.set(f, 'done');
    };
    for (const f of files) if (!state.has(f)) visit(f);
    assert.ok(edges.size > 100, `${edges.size} modules read`);
    assert.deepEqual(cycles, []);
  });
});
