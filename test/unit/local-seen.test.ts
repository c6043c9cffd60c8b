import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LOCAL_SEEN, LocalSeen } from '../../src/crawl/dedupe/local-seen.js';

describe('a worker\'s local seen filter', () => {
  it('remembers what was added, reports (1 − e^(−kn/m))^k, and no false positive among 100,000 unseen URLs at this size', () => {
    const s = new LocalSeen(10_000);
    const urls = Array.from({ length: 10_000 }, (_, i) => `https://example.org/docs/page-${i}.html`);
    assert.equal(s.falsePositiveRate, 0);
    s.addAll(urls);
    assert.ok(urls.every((u) => s.has(u)));
    let fp = 0;
    for (let i = 0; i < 100_000; i++) if (s.has(`https://example.org/other/${i}`)) fp++;
    assert.equal(fp, 0);
    assert.ok(s.falsePositiveRate > 0 && s.falsePositiveRate <= LOCAL_SEEN.falsePositiveRate * 1.01, `${s.falsePositiveRate}`);
  });

  it('its hashing spreads URLs as the model says: at a 1% target, 1% false positives measured', () => {
    const s = new LocalSeen(10_000, 0.01);
    s.addAll(Array.from({ length: 10_000 }, (_, i) => `https://example.org/docs/page-${i}.html`));
    let fp = 0;
    const trials = 200_000;
    for (let i = 0; i < trials; i++) if (s.has(`https://example.org/other/${i}`)) fp++;
    const measured = fp / trials;
    assert.ok(Math.abs(measured - s.falsePositiveRate) < 0.25 * s.falsePositiveRate, `measured ${measured}, model ${s.falsePositiveRate}`);
    assert.ok(measured < 0.0125, `measured ${measured}`);
  });

  it('starts afresh past its capacity (bounded memory): what it forgot is offered to Redis again', () => {
    const s = new LocalSeen(1); // the smallest capacity: 1,000 URLs
    s.addAll(Array.from({ length: 1000 }, (_, i) => `u${i}`));
    assert.ok(s.has('u0'));
    s.addAll(['u1000']);
    assert.ok(!s.has('u0') && s.has('u1000'));
  });
});
