/** Every relative link in README.md and docs/ names a file that exists, and a heading there when it names one. */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = new URL('../../', import.meta.url).pathname;

/** GitHub's anchor for a heading: lowercased, punctuation dropped, spaces as hyphens. */
const slug = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

/** The anchors of a Markdown file's headings (fenced code left out). */
function anchors(file: string): Set<string> {
  const out = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line);
    if (m) out.add(slug(m[1] as string));
  }
  return out;
}

describe('documentation links', () => {
  it('resolve, from README.md and every page in docs/, to a file and (when named) a heading in it', () => {
    const pages = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    const broken: string[] = [];
    let checked = 0;
    for (const page of pages) {
      const text = readFileSync(join(ROOT, page), 'utf8');
      for (const m of text.matchAll(/\]\(([^)\s#]*)(?:#([^)\s]*))?\)/g)) {
        const [, target = '', anchor] = m;
        if (/^[a-z]+:/i.test(target)) continue;
        const file = target === '' ? join(ROOT, page) : normalize(join(ROOT, dirname(page), target));
        checked++;
        if (!existsSync(file)) broken.push(`${page}: ${target}`);
        else if (anchor && file.endsWith('.md') && !anchors(file).has(anchor)) broken.push(`${page}: ${target}#${anchor}`);
      }
    }
    assert.ok(pages.length > 1 && checked > 20, `${checked} links in ${pages.length} pages`);
    assert.deepEqual(broken, []);
  });

  it("an anchor is the heading's GitHub slug", () => {
    assert.equal(slug("One URL's path, from seed file to output line"), 'one-urls-path-from-seed-file-to-output-line');
    assert.equal(slug('Keeping the pages: WARC'), 'keeping-the-pages-warc');
    assert.equal(slug('The queue: `npm run bench:queue`'), 'the-queue-npm-run-benchqueue');
  });
});
