/**
 * The kickoff's processes load no HTTP client and no HTML parser (`weir
 * kickoff`, and `weir crawl`'s own process, which kicks off before its
 * workers start): loading undici and htmlparser2 with their modules' indexes
 * cost each some 0.15 s of start-up (eslint.config.js lets kickoff.ts take
 * the few leaf modules it needs instead).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';

const ROOT = new URL('../../', import.meta.url);

/** Every module URL a fresh process resolves while importing `module` (a path from the repository's root). */
function modulesLoadedBy(module: string): string[] {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--import', './test/helpers/resolve-log.mjs', '-e', `await import(${JSON.stringify(new URL(module, ROOT).href)})`, '--input-type=module'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  return [...r.stderr.matchAll(/^RESOLVED (\S+)$/gm)].map((m) => m[1] as string);
}

describe('what the kickoff loads', () => {
  for (const command of ['src/cli/kickoff.ts', 'src/cli/crawl.ts']) {
    it(`${command} loads neither undici nor htmlparser2`, () => {
      const loaded = modulesLoadedBy(command);
      assert.ok(loaded.some((u) => u.endsWith('/src/crawl/kickoff.ts')), `the kickoff is among what it loads (${loaded.length} modules)`);
      const heavy = loaded.filter((u) => /\/node_modules\/(undici|htmlparser2)\//.test(u));
      assert.deepEqual(heavy, []);
    });
  }
  it('the worker does load them (the check sees what a command loads)', () => {
    const loaded = modulesLoadedBy('src/cli/worker.ts');
    assert.ok(loaded.some((u) => /\/node_modules\/undici\//.test(u)));
    assert.ok(loaded.some((u) => /\/node_modules\/htmlparser2\//.test(u)));
  });
});
