/** robots.txt parsing and matching. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonical, parseRobots, patternMatches, productTokenOf, RobotsMatcher, robotsText } from '../../src/crawl/robots/parse.js';
describe('robots.txt', () => {
  const txt = `# comment
User-agent: *
Disallow: /

User-agent: Weir
User-agent: otherbot
Disallow: /private
Allow: /private/public
Disallow: /*.pdf$
Disallow: /tmp*
Crawl-delay: 2

User-agent: weir
Disallow: /also
`;
  it('uses the group of our product token (case-insensitively, all such groups combined)', () => {
    const r = parseRobots(txt, 'weir');
    const m = new RobotsMatcher(r);
    assert.equal(r.crawlDelay, 2);
    assert.equal(m.isAllowed('/'), true, 'the * group does not apply to us');
    assert.equal(m.isAllowed('/private/x'), false);
    assert.equal(m.isAllowed('/private/public/x'), true, 'longest match wins');
    assert.equal(m.isAllowed('/doc.pdf'), false);
    assert.equal(m.isAllowed('/doc.pdf?x'), true, '$ anchors the end');
    assert.equal(m.isAllowed('/tmpfile'), false);
    assert.equal(m.isAllowed('/also'), false, 'second group for the same token');
    assert.equal(m.isAllowed('/robots.txt'), true);
  });

  it('falls back to *, and allows everything with no applying group', () => {
    assert.equal(new RobotsMatcher(parseRobots(txt, 'somebot')).isAllowed('/x'), false);
    assert.equal(new RobotsMatcher(parseRobots('User-agent: other\nDisallow: /\n', 'weir')).isAllowed('/x'), true);
    assert.equal(new RobotsMatcher(parseRobots('User-agent: *\nDisallow:\n', 'weir')).isAllowed('/x'), true);
  });

  it('prefers allow on equal-length matches and compares percent-encodings canonically', () => {
    const m = new RobotsMatcher(parseRobots('User-agent: *\nDisallow: /a\nAllow: /a\nDisallow: /%7Euser\n', 'weir'));
    assert.equal(m.isAllowed('/a'), true);
    assert.equal(m.isAllowed('/~user/x'), false);
  });
});

describe('robots.txt as RFC 9309 reads it', () => {
  const allowed = (text: string, path: string, token = 'foo'): boolean => new RobotsMatcher(parseRobots(text, token)).isAllowed(path);

  it('other records between user-agent lines do not end the group (§2.2.4)', () => {
    const text = 'User-agent: bar\nSitemap: https://example.org/s.xml\nUser-agent: foo\nUnknown: x\nUser-agent: baz\nDisallow: /x\n';
    for (const ua of ['foo', 'bar', 'baz']) assert.equal(allowed(text, '/x/y', ua), false, ua);
    assert.equal(allowed(text, '/x', 'other'), true);
  });

  it('a user-agent value is matched on its first product token, case-insensitively', () => {
    assert.equal(allowed('User-agent: FOO BAR\nDisallow: /\n', '/a'), false);
    assert.equal(allowed('User-agent: Foo/1.2 (+http://x)\nDisallow: /\n', '/a'), false);
    assert.equal(allowed('User-agent: BAR FOO\nDisallow: /\n', '/a'), true, 'only the first token counts');
    assert.equal(productTokenOf('  *  '), '*');
  });

  it('non-ASCII in patterns is percent-encoded as UTF-8 before matching (§2.2.2)', () => {
    const text = 'User-agent: *\nDisallow: /foo/bar/ツ\nDisallow: /café$\n';
    assert.equal(allowed(text, '/foo/bar/%E3%83%84'), false);
    assert.equal(allowed(text, '/foo/bar/%e3%83%84/x'), false, 'escapes compared case-insensitively');
    assert.equal(allowed(text, '/caf%C3%A9'), false);
    assert.equal(allowed(text, '/caf%C3%A9s'), true);
    assert.equal(canonical('/ツ?q=é'), '/%E3%83%84?q=%C3%A9');
  });

  it('a byte-order mark at the start, whole or partial, is skipped; one in the middle spoils its line', () => {
    const rules = Buffer.from('User-agent: foo\nDisallow: /x\n');
    for (const bom of [[0xef, 0xbb, 0xbf], [0xef, 0xbb], [0xef]]) {
      assert.equal(allowed(robotsText(Buffer.concat([Buffer.from(bom), rules])), '/x'), false, `BOM ${bom.length} bytes`);
    }
    const mid = robotsText(Buffer.concat([Buffer.from('User-agent: foo\n'), Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('Disallow: /x\n')]));
    assert.equal(allowed(mid, '/x'), true);
  });

  it('wildcards: * anywhere, $ only at the end; longest match wins, allow on ties', () => {
    assert.equal(patternMatches('/*.php$', '/index.php'), true);
    assert.equal(patternMatches('/*.php$', '/index.php?x'), false);
    assert.equal(patternMatches('/fish*', '/fishheads'), true);
    assert.equal(patternMatches('/a$b', '/a$b/c'), true, 'a $ before the end is a plain character');
    assert.equal(patternMatches('*', '/anything'), true);
    assert.equal(patternMatches('/**x', '/yx'), true);
    assert.equal(allowed('User-agent: *\nDisallow: /*.gif$\nAllow: /*.gif$\n', '/a.gif'), true);
  });

  it('matching is linear in pattern × path: a backtracking-hostile rule on a long path answers at once', () => {
    const text = `User-agent: *\nDisallow: /${'*a'.repeat(40)}*b$\n`;
    const m = new RobotsMatcher(parseRobots(text, 'weir'));
    const path = `/${'a'.repeat(8000)}`;
    const started = performance.now();
    assert.equal(m.isAllowed(path), true);
    assert.equal(m.isAllowed(`${path}b`), false);
    // A backtracking regex takes exponential time here (hours at 48 characters, ×4 per two more);
    // this walk does 80 × 8,000 steps.
    assert.ok(performance.now() - started < 2000);
  });
});
