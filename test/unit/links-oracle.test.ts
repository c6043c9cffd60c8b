/**
 * The tokenizer-based link extraction (src/crawl/links/extract.ts, html-tree.ts) against
 * htmlparser2's Parser (the way weir extracted links before, kept here as
 * the oracle) on random markup built from the fragments that matter: the
 * same links, base, title and meta robots, whole and in slices. (400,000
 * random pages agreed when the open-element rules were written.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Parser } from 'htmlparser2';
import { extractLinks, extractLinksAsync, type PageLinks } from '../../src/crawl/links/extract.js';

const DROPPED_SCHEMES = /^\s*(mailto|javascript|tel|data|about|blob|file|ftp|sms|callto|vbscript):/i;

function oracle(html: string, productToken = 'weir'): PageLinks {
  const out: PageLinks = { hrefs: [], nofollowHrefs: [], base: null, title: null, metaNofollow: false };
  let inTitle = false;
  let titleText = '';
  const token = productToken.toLowerCase();
  const parser = new Parser(
    {
      onopentag(name, attrs) {
        if ((name === 'a' || name === 'area') && typeof attrs.href === 'string') {
          const href = attrs.href.trim();
          if (href === '' || DROPPED_SCHEMES.test(href)) return;
          const rel = (attrs.rel ?? '').toLowerCase().split(/\s+/);
          (rel.includes('nofollow') ? out.nofollowHrefs : out.hrefs).push(href);
        } else if (name === 'base' && out.base === null && typeof attrs.href === 'string') {
          out.base = attrs.href.trim();
        } else if (name === 'title' && out.title === null) {
          inTitle = true;
        } else if (name === 'meta') {
          const metaName = (attrs.name ?? '').toLowerCase();
          if (metaName === 'robots' || metaName === token) {
            const content = (attrs.content ?? '').toLowerCase().split(/[\s,]+/);
            if (content.includes('nofollow') || content.includes('none')) out.metaNofollow = true;
          }
        }
      },
      ontext(text) {
        if (inTitle) titleText += text;
      },
      onclosetag(name) {
        if (name === 'title' && inTitle) {
          inTitle = false;
          out.title = titleText.replace(/\s+/g, ' ').trim().slice(0, 1000);
        }
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.write(html);
  parser.end();
  if (inTitle) out.title = titleText.replace(/\s+/g, ' ').trim().slice(0, 1000);
  return out;
}

const FRAGMENTS = [
  '<a href="/x">', "<a href='/y&amp;z'>", '<A HREF=/Up>', '<a href=" /sp ">', '<a href="mailto:m@x">', '<a href="">', '<a>', '</a>',
  '<area href="/ar">', '<a rel="nofollow" href="/nf">', '<a href="/d1" href="/d2">', '<a href="/e&#x41;&eacute;">', '<a href=/q?a=1&b=2>',
  '<base href="/b/">', '<BASE HREF=/b2/>', '<title>', '</title>', '<TITLE>', 'T &amp; U', '&lt;a href="/t"&gt;',
  '<meta name="robots" content="noindex, nofollow">', '<meta name="WEIR" content="none">', '<meta name=other content=nofollow>',
  '<script>', '</script>', '<style>', '</style>', '<textarea>', '</textarea>', '<iframe>', '</iframe>', '<noscript>', '</noscript>',
  '<!--', '-->', '<![CDATA[', ']]>', '<!doctype html>', '<?php ?>', '<svg>', '</svg>', '<p>', '</p>', '<br/>', '<a href="/sc"/>',
  ' text ', '\n', '<', '>', '"', "'", '=', '&', '<a href="/unterminated', '<a href=',
];

const markup = fc.array(fc.constantFrom(...FRAGMENTS), { maxLength: 40 }).map((parts) => parts.join(''));

describe('link extraction (tokenizer) against the Parser', () => {
  it('agrees on random markup, whole and sliced', async () => {
    await fc.assert(
      fc.asyncProperty(markup, async (html) => {
        const want = oracle(html);
        assert.deepEqual(extractLinks(html), want);
        assert.deepEqual(await extractLinksAsync(html), want);
      }),
      { numRuns: 1000 },
    );
  });

  it('agrees where SVG/MathML change what is raw text (cases the property test found)', async () => {
    for (const html of [
      '<svg><iframe><a href="/x">',
      '<svg><title></svg><script><a href="/x">',
      '<a href="/x"><svg></a><textarea><a href="/y">',
      '<p><svg><div></p><style><a href="/z">',
      '<svg><foreignObject><textarea><a href="/f"></textarea></foreignObject><a href="/g">',
      '<math><mi><script><a href="/m"></script></mi></math><a href="/n">',
      '<svg/><textarea><a href="/s"></textarea><image><a href="/i">',
    ]) {
      assert.deepEqual(extractLinks(html), oracle(html), html);
      assert.deepEqual(await extractLinksAsync(html), oracle(html), html);
    }
  });

  it('agrees on a page long enough to be tokenized in many slices', async () => {
    const html = `<title>big</title>${Array.from({ length: 20_000 }, (_, i) => `<p>text ${i} &amp; more</p><a href="/p/${i}">${i}</a>`).join('')}`;
    assert.ok(html.length > 10 * 64 * 1024);
    const got = await extractLinksAsync(html);
    assert.deepEqual(got, oracle(html));
    assert.equal(got.hrefs.length, 20_000);
  });
});
