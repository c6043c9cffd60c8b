import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { waitReason, type DomainStats } from '../../src/crawl/counters/stats.js';
import type { QueueStats } from '../../src/queue/index.js';
import { parseViewQuery, selectRows, ViewQueryError } from '../../src/status/view.js';

const q = (over: Partial<QueueStats>): QueueStats => ({ name: 'a', rate: 2, pace: 2, maxInFlight: 0, queued: 3, leased: 0, delayed: 0, done: 0, dead: 0, nextEligibleAt: 0, pausedUntil: 0, held: false, ...over });

describe('why a domain waits', () => {
  const now = 10_000;
  it('in order: hold, a noted pause, empty, in-flight cap, Crawl-delay or rate, else a free worker', () => {
    assert.equal(waitReason(q({ held: true, pausedUntil: now + 5 }), now, undefined, undefined), 'hold');
    assert.equal(waitReason(q({ pausedUntil: now + 500 }), now, { why: 'retry-after', until: now + 500 }, undefined), 'retry-after');
    assert.equal(waitReason(q({ pausedUntil: now + 500 }), now, { why: 'robots', until: now + 500 }, undefined), 'robots');
    // The note's pause was moved (robots.txt answered; the pause now keeps the rate).
    assert.equal(waitReason(q({ pausedUntil: now + 400 }), now, { why: 'robots', until: now + 30_000 }, undefined), 'rate');
    assert.equal(waitReason(q({ queued: 0, delayed: 2 }), now, undefined, undefined), 'retry');
    assert.equal(waitReason(q({ queued: 0, leased: 1 }), now, undefined, undefined), 'fetching');
    assert.equal(waitReason(q({ queued: 0 }), now, undefined, undefined), 'nothing');
    assert.equal(waitReason(q({ maxInFlight: 2, leased: 2, nextEligibleAt: now + 100 }), now, undefined, undefined), 'in-flight cap');
    assert.equal(waitReason(q({ rate: 0.5, nextEligibleAt: now + 100 }), now, undefined, 2), 'crawl-delay');
    assert.equal(waitReason(q({ rate: 2, nextEligibleAt: now + 100 }), now, undefined, 2), 'rate', 'a Crawl-delay looser than the limit does not hold it back');
    assert.equal(waitReason(q({ nextEligibleAt: now - 1 }), now, undefined, undefined), 'worker');
  });
});

describe('the table query', () => {
  it('parses defaults and names the bad parameter', () => {
    assert.deepEqual(parseViewQuery(new URLSearchParams('')), { q: '', sort: 'domain', dir: 'asc', page: 0, size: 25 });
    assert.deepEqual(parseViewQuery(new URLSearchParams('q=%20Ex%20&sort=pages&page=2&size=50')), { q: 'ex', sort: 'pages', dir: 'desc', page: 2, size: 50 });
    for (const [query, name] of [['sort=__proto__', 'sort'], ['dir=up', 'dir'], ['page=1e3', 'page'], ['size=0', 'size'], ['size=201', 'size'], [`q=${'x'.repeat(201)}`, 'q']]) {
      assert.throws(() => parseViewQuery(new URLSearchParams(query)), (e: Error) => e instanceof ViewQueryError && e.message.startsWith(`${name}:`), query);
    }
  });

  it('filters by substring (no pattern), sorts with unlimited above every number, ties by name, pages', () => {
    const d = (domain: string, rateLimit: DomainStats['rateLimit'], pages: number) => ({ domain, rateLimit, pages }) as DomainStats;
    const all = [d('b.org', 5, 1), d('a.org', 'unlimited', 3), d('c.net', 1, 3), d('(a+)+$', 2, 0)];
    assert.deepEqual(selectRows(all, parseViewQuery(new URLSearchParams('sort=rateLimit'))).rows.map((r) => r.domain), ['a.org', 'b.org', '(a+)+$', 'c.net']);
    assert.deepEqual(selectRows(all, parseViewQuery(new URLSearchParams('sort=pages&size=2&page=0'))).rows.map((r) => r.domain), ['a.org', 'c.net']);
    const found = selectRows(all, parseViewQuery(new URLSearchParams('q=(a%2B)%2B%24')));
    assert.deepEqual([found.matched, found.rows[0]?.domain], [1, '(a+)+$']);
    assert.equal(selectRows(all, parseViewQuery(new URLSearchParams('q=.org'))).matched, 2);
  });
});
