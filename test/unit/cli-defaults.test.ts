/** `weir crawl`'s default worker count: a process per core, but no more than the crawl's fetches in flight fill. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { workersToFill } from '../../src/cli/main.js';

describe('weir crawl --workers default', () => {
  const seed = (domains: number, maxInFlightPerDomain: number) => ({ rateLimits: Object.fromEntries(Array.from({ length: domains }, (_, i) => [`d${i}.test`, 1])), maxInFlightPerDomain });

  it('one origin with 8 in flight fills one worker of 16 lanes: one process, whatever the cores', () => {
    assert.equal(workersToFill(seed(1, 8), 16, 8), 1);
    assert.equal(workersToFill(seed(1, 2), 16, 2), 1);
  });

  it('more domains than one worker holds: a worker per core, up to what they fill', () => {
    assert.equal(workersToFill(seed(100, 2), 16, 2), 2);
    assert.equal(workersToFill(seed(10, 2), 16, 8), 2, '20 in flight: two workers of 16');
    assert.equal(workersToFill(seed(1000, 4), 16, 8), 8);
  });

  it('a crawl that follows other domains may reach any number: a worker per core', () => {
    const outward = { ...seed(1, 2), otherDomains: { key: 'host' as const, rate: 1, maxInFlight: 1, maxDomains: 100 } };
    assert.equal(workersToFill(outward, 16, 4), 4);
    assert.equal(workersToFill({ ...outward, otherDomains: null }, 16, 4), 1);
  });
});
