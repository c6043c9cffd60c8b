/** Every relative link in README.md and docs/ names a file that exists. */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = new URL('../../', import.meta.url).pathname;

describe('documentation links', () => {
  it('resolve, from README.md and every page in docs/', () => {
    const pages = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    const broken: string[] = [];
    for (const page of pages) {
      const text = readFileSync(join(ROOT, page), 'utf8');
      for (const m of text.matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)) {
        const target = m[1] as string;
        if (/^[a-z]+:/i.test(target)) continue;
        if (!existsSync(join(ROOT, dirname(page), target))) broken.push(`${page}: ${target}`);
      }
    }
    assert.ok(pages.length > 1);
    assert.deepEqual(broken, []);
  });
});
