/** The robots gate's verdicts from what is known of an origin's robots.txt. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ROBOTS, type RobotsEntry } from '../../src/crawl/robots/cache.js';
import { robotsVerdict } from '../../src/crawl/robots/gate.js';
import { parseRobots, RobotsMatcher } from '../../src/crawl/robots/parse.js';

const rules = (text: string): RobotsEntry => {
  const r = parseRobots(text, 'weir');
  return { state: { state: 'rules', rules: r, fetchedAt: 0 }, matcher: new RobotsMatcher(r) };
};
const error = (failures: number, retryAt: number): RobotsEntry => ({ state: { state: 'error', failures, retryAt, reason: 'HTTP 503' }, matcher: null });

describe('robots gate', () => {
  it('unknown: fetch it (no failures yet)', () => {
    assert.deepEqual(robotsVerdict(null, '/', 0), { kind: 'fetch', failures: 0 });
  });

  it('known rules: allow or disallow by path and query', () => {
    const e = rules('User-agent: *\nDisallow: /private\n');
    assert.deepEqual(robotsVerdict(e, '/private/x', 0), { kind: 'disallow' });
    assert.deepEqual(robotsVerdict(e, '/public?private', 0), { kind: 'allow' });
    assert.deepEqual(robotsVerdict({ state: { state: 'allow-all', status: 404, fetchedAt: 0 }, matcher: null }, '/private', 0), { kind: 'allow' });
  });

  it('failed for now: later until its retry time (at least 100 ms), then fetch again with the failures counted', () => {
    assert.deepEqual(robotsVerdict(error(2, 5000), '/', 1000), { kind: 'later', ms: 4000, reason: 'robots.txt unavailable for now' });
    assert.deepEqual(robotsVerdict(error(2, 1050), '/', 1000), { kind: 'later', ms: 100, reason: 'robots.txt unavailable for now' });
    assert.deepEqual(robotsVerdict(error(2, 1000), '/', 1000), { kind: 'fetch', failures: 2 });
  });

  it('failed too often: the URL is given up on, whatever the time', () => {
    assert.deepEqual(robotsVerdict(error(ROBOTS.maxFailures, 0), '/', 1000), { kind: 'unavailable', reason: 'robots.txt unavailable: HTTP 503' });
  });
});
