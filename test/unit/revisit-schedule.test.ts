/** The revisit schedule of one URL (src/crawl/revisit/schedule.ts): what changed means, the interval rule, gone pages, conditional headers. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { conditionalHeaders, nextVisit, payloadDigest, type VisitResponse } from '../../src/crawl/revisit/index.js';
import type { RevisitPolicy } from '../../src/crawl/seed/index.js';
import type { VisitRecord } from '../../src/crawl/store/index.js';

const policy: RevisitPolicy = { minIntervalSeconds: 10, initialIntervalSeconds: 100, maxIntervalSeconds: 1000, maxUrls: 10, goneAfter: 2 };
const ok = (body: string, headers: VisitResponse['headers'] = {}): VisitResponse => ({ url: 'http://a.test/', status: 200, headers, body: Buffer.from(body) });
const status = (s: number, headers: VisitResponse['headers'] = {}): VisitResponse => ({ url: 'http://a.test/', status: s, headers, body: null });

/** Visits in turn; the records. */
function visits(responses: VisitResponse[], p = policy): ReturnType<typeof nextVisit>[] {
  let prev: VisitRecord | null = null;
  return responses.map((r, i) => {
    const v = nextVisit(prev, r, p, 1000 * i);
    prev = v.record;
    return v;
  });
}

describe('revisit schedule', () => {
  it('first visit: the initial interval, nothing known to have changed; then halves on a change and grows by half without one, within the bounds', () => {
    const v = visits([ok('a'), ok('b'), ok('c'), ok('c'), ok('c'), ok('c'), ok('c'), ok('c'), ok('c'), ok('c')]);
    assert.deepEqual(v.map((x) => x.changed), [null, true, true, false, false, false, false, false, false, false]);
    assert.deepEqual(v.map((x) => x.record.intervalS), [100, 50, 25, 37.5, 56.25, 84.375, 126.563, 189.845, 284.768, 427.152]);
    const many = visits([ok('a'), ...Array.from({ length: 10 }, (_, i) => ok(`x${i}`))]);
    assert.equal(many.at(-1)?.record.intervalS, 10, 'never under minIntervalSeconds');
    const still = visits(Array.from({ length: 20 }, () => ok('same')));
    assert.equal(still.at(-1)?.nextMs, 1_000_000, 'never over maxIntervalSeconds');
    assert.deepEqual([v[9]?.record.visits, v[9]?.record.changes], [10, 2]);
  });

  it('a 304 is unchanged and keeps the digest, validators and capture of the payload it stands for', () => {
    const [first, second] = visits([ok('a', { etag: '"e1"', 'last-modified': 'Mon, 01 Jan 2024 00:00:00 GMT' }), status(304)]);
    assert.ok(first && second);
    assert.deepEqual([second.changed, second.notModified], [false, true]);
    assert.deepEqual([second.record.digest, second.record.etag, second.record.lastModified, second.record.capturedAt, second.record.status], [payloadDigest(Buffer.from('a')), '"e1"', 'Mon, 01 Jan 2024 00:00:00 GMT', 0, 200]);
    assert.deepEqual(conditionalHeaders(second.record), { 'if-none-match': '"e1"', 'if-modified-since': 'Mon, 01 Jan 2024 00:00:00 GMT' });
    assert.deepEqual(conditionalHeaders(null), {});
  });

  it('without a body, validators tell; with neither, nothing is known to have changed', () => {
    const [, b, c] = visits([status(200, { etag: '"1"' }), status(200, { etag: '"1"' }), status(200, { etag: '"2"' })]);
    assert.deepEqual([b?.changed, c?.changed], [false, true]);
    const [, d] = visits([status(200), status(200)]);
    assert.equal(d?.changed, null);
    assert.equal(d?.record.intervalS, 100, 'unknown keeps the interval');
  });

  it('a cache lifetime the site gives is a floor within the bounds', () => {
    assert.equal(nextVisit(null, ok('a', { 'cache-control': 'max-age=500' }), policy).record.intervalS, 500);
    assert.equal(nextVisit(null, ok('a', { 'cache-control': 'max-age=99999' }), policy).record.intervalS, 1000);
    assert.equal(nextVisit(null, ok('a', { 'cache-control': 'no-store' }), policy).record.intervalS, 100);
  });

  it('gone: 404/410 after it was there, visited goneAfter more times, then dropped; missing on its first visit, not kept', () => {
    const v = visits([ok('a'), status(404), status(410), status(404)]);
    assert.deepEqual(v.map((x) => x.gone), [false, true, true, true]);
    assert.deepEqual(v.map((x) => x.record.gone), [0, 1, 2, 3]);
    assert.deepEqual(v.map((x) => x.nextMs === null), [false, false, false, true]);
    const back = visits([ok('a'), status(404), ok('a')]);
    assert.deepEqual([back[2]?.changed, back[2]?.record.gone], [false, 0], 'back with the same payload: unchanged, no longer gone');
    assert.equal(nextVisit(null, status(404), policy).nextMs, null);
  });

  it('an oversized validator is not kept (it would ride in the queue item)', () => {
    assert.equal(nextVisit(null, ok('a', { etag: `"${'x'.repeat(300)}"` }), policy).record.etag, null);
  });
});
