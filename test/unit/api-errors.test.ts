/**
 * Defects found reading the code (issue 28), each pinned: the API validates
 * every seed object and every leaseMs; error codes are checked against the
 * one list, across installed copies; the command line leaves the process's
 * signal handlers as it found them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { forwardSignals, trapSignals } from '../../src/cli/signals.js';
import { isWeirError, WeirError } from '../../src/errors.js';
import { crawl, validateSeed, worker } from '../../src/index.js';
import { fromReplyError, QueueArgumentError } from '../../src/queue/errors.js';

// Nothing listens here: a call that got as far as Redis would fail, not hang.
const NOWHERE = 'redis://127.0.0.1:1';
const fields = { arena: 'api', rateLimits: { 'a.com': 1 }, start: ['http://a.com/'] };

describe('the API, errors and signals', () => {
  it('an object that only looks like a validated seed is validated (its productToken proves nothing)', async () => {
    const fake = { ...fields, productToken: 'weir', rateLimits: { 'a.com': -1 } };
    await assert.rejects(crawl(fake, { redis: NOWHERE }), { code: 'WEIR_SEED', field: 'rateLimits.a.com' });
    await assert.rejects(worker(fake, { redis: NOWHERE }), { code: 'WEIR_SEED' });
    // A real one still works, and its derived field is derived again.
    const seed = validateSeed(fields);
    await assert.rejects(crawl({ ...seed, maxDepth: -1 }, { redis: NOWHERE }), { code: 'WEIR_SEED', field: 'maxDepth' });
  });

  it('leaseMs 0 (or below the least, or a fraction) is refused before Redis is looked for, not replaced by the default', async () => {
    for (const leaseMs of [0, 999, 1500.5, Number.NaN]) {
      await assert.rejects(crawl(fields, { redis: NOWHERE, leaseMs }), { code: 'WEIR_BAD_ARGS', message: /leaseMs must be a whole number/ }, String(leaseMs));
    }
  });

  it("a script's WEIR_ word is a queue error code only if it is one of the list", () => {
    const known = fromReplyError(new Error('WEIR_BAD_ARGS count must be an integer'));
    assert.ok(known instanceof QueueArgumentError);
    assert.equal(known.code, 'WEIR_BAD_ARGS');
    const unknown = new Error('WEIR_MADE_UP something');
    assert.equal(fromReplyError(unknown), unknown);
    assert.equal(isWeirError(unknown), false);
  });

  it("isWeirError knows another installed copy's errors (a registered brand), and checks the code", () => {
    class OtherCopysError extends Error {
      readonly code = 'WEIR_LATE';
      constructor() {
        super('from another copy');
        Object.defineProperty(this, Symbol.for('weir.WeirError'), { value: true });
      }
    }
    const other = new OtherCopysError();
    assert.equal(other instanceof WeirError, false);
    assert.equal(isWeirError(other), true);
    assert.equal(isWeirError(other, 'WEIR_LATE'), true);
    assert.equal(isWeirError(other, 'WEIR_TIMEOUT'), false);
    assert.equal(isWeirError(Object.assign(new Error('x'), { code: 'WEIR_LATE' })), false, 'a code alone is not a brand');
    assert.equal(isWeirError(new WeirError('WEIR_USAGE', 'here')), true);
  });

  it('a command leaves the signal handlers as it found them', () => {
    const count = (): number[] => ['SIGINT', 'SIGTERM'].map((s) => process.listenerCount(s));
    const before = count();
    for (let i = 0; i < 3; i++) {
      const sig = trapSignals(pino({ level: 'silent' }));
      const fwd = forwardSignals([]);
      assert.deepEqual(count(), before.map((n) => n + 2));
      sig.release();
      fwd.release();
    }
    assert.deepEqual(count(), before);
  });
});
