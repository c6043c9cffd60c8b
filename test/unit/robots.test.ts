/** robots.txt parsing and matching. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRobots, RobotsMatcher } from '../../src/crawl/robots.js';
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
