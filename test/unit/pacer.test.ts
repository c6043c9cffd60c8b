/** The send pacer on a fake clock: held to the slot, one report per lease, the send window. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PACING, SendPacer, type LocalClock, type SlotQueue } from '../../src/crawl/lease/pacer.js';
import type { Lease } from '../../src/queue/index.js';

/** A clock that jumps to each deadline (plus `lag` ms, an event loop running late) instead of sleeping. */
function fakeClock(start: number, lag = 0): LocalClock & { t: number } {
  const c = {
    t: start,
    now: () => c.t,
    sleepUntil: (at: number) => {
      c.t = Math.max(c.t, at + lag);
      return Promise.resolve();
    },
  };
  return c;
}

interface Report {
  queue: string;
  sent: boolean;
  margin: number | undefined;
  at: number;
}

/** Local ms 0 = Redis ms 1,000,000; the send reports and window renewals made are recorded. */
function fakeQueue(clock: { t: number }, uncertaintyMs = 0, renewalAnswer: 'ok' | 'stale' = 'ok'): SlotQueue & { reports: Report[]; renewals: { queue: string; at: number }[] } {
  const reports: Report[] = [];
  const renewals: { queue: string; at: number }[] = [];
  return {
    reports,
    renewals,
    clockOf: () => ({ uncertaintyMs, toRedis: (local: number) => local + 1_000_000, toLocal: (redis: number) => redis - 1_000_000 }),
    reportSent: (lease, sent, margin) => {
      reports.push({ queue: lease.queue, sent, margin, at: clock.t });
    },
    stillSending: (lease) => {
      renewals.push({ queue: lease.queue, at: clock.t });
      return Promise.resolve(renewalAnswer);
    },
  };
}

const lease = (localServedAt: number, intervalMs: number, queue = 'q'): Lease => ({
  arena: 'a',
  shard: 'a',
  token: 't',
  queue,
  item: 'i',
  attempt: 1,
  expiresAt: 0,
  servedAt: localServedAt + 1_000_000,
  localServedAt,
  intervalMs,
});

const WINDOW = 10_000;

function pacer(clock: LocalClock & { t: number }, queue: SlotQueue): { pacer: SendPacer; counts: string[] } {
  const counts: string[] = [];
  return { pacer: new SendPacer(queue, WINDOW, (_d, n) => counts.push(n), clock), counts };
}

describe('send pacer', () => {
  it('holds a request to its slot plus the clock uncertainty, never before, and reports its write once', async () => {
    const clock = fakeClock(0);
    const q = fakeQueue(clock, 0.4);
    const { pacer: p, counts } = pacer(clock, q);
    const send = await p.hold(lease(100, 500));
    assert.ok(send);
    assert.equal(send.plannedAt, 100.4);
    assert.equal(clock.t, 100.4);
    assert.deepEqual(q.reports, [], 'nothing reported before the write');
    assert.equal(send.mayGo(100.5), true);
    clock.t = 101;
    send.wrote(101);
    send.done();
    assert.deepEqual(q.reports, [{ queue: 'q', sent: true, margin: PACING.marginMs, at: 101 }], 'one report, as the write is seen');
    assert.deepEqual(counts, []);
  });

  it('a write long after its slot (a stall) is still sent and reported: the next slot counts from it', async () => {
    const clock = fakeClock(0, 300); // wakes 300 ms late
    const q = fakeQueue(clock);
    const { pacer: p, counts } = pacer(clock, q);
    const send = await p.hold(lease(100, 50));
    assert.ok(send, 'late is not too late: the queue holds the next slot until the report');
    assert.equal(send.mayGo(clock.t), true);
    send.wrote(clock.t + 5);
    assert.deepEqual(
      q.reports.map((r) => r.sent),
      [true],
    );
    assert.deepEqual(counts, ['lateSends']);
  });

  it("maps the slot with the clock's estimate at send time, not the one its lease came with", async () => {
    // The lease arrived when a poor estimate put its slot at local 100; a better
    // one since (u 0.4) puts that Redis time at local 120. Sending by the old
    // mapping would be 20 ms before the slot.
    const clock = fakeClock(0);
    const q = fakeQueue(clock, 0.4);
    const shifted = { ...q, clockOf: () => ({ ...q.clockOf('a'), toLocal: (redis: number) => redis - 1_000_000 + 20 }) };
    const { pacer: p } = pacer(clock, shifted);
    const send = await p.hold(lease(100, 500));
    assert.equal(send?.plannedAt, 120.4);
    assert.equal(clock.t, 120.4);
  });

  it("maps a lease's slot by its own shard's clock (a Cluster's masters may keep different time)", async () => {
    const clock = fakeClock(0);
    const q = fakeQueue(clock);
    // Shard b's master runs 30 ms ahead of shard a's: the same Redis time is 30 ms sooner here.
    const twoMasters: SlotQueue = { ...q, clockOf: (shard) => (shard === 'b' ? { ...q.clockOf('a'), toLocal: (redis: number) => redis - 1_000_030 } : q.clockOf('a')) };
    const { pacer: p } = pacer(clock, twoMasters);
    const ofB = { ...lease(200, 500), shard: 'b' };
    assert.equal((await p.hold(ofB))?.plannedAt, 170);
    assert.equal((await p.hold(lease(200, 500)))?.plannedAt, 200);
  });

  it('waits again when the estimate moves the slot later while it waits (a bounded number of times)', async () => {
    const clock = fakeClock(0);
    const q = fakeQueue(clock);
    // Each wake sees the slot 7 ms later than before (new samples while asleep).
    let shift = 0;
    const moving: SlotQueue = { ...q, clockOf: () => ({ ...q.clockOf('a'), toLocal: (redis: number) => redis - 1_000_000 + shift }) };
    const sleeps: number[] = [];
    const c = { ...clock, sleepUntil: (at: number) => (sleeps.push(at), (clock.t = Math.max(clock.t, at)), (shift += 7), Promise.resolve()) };
    const p = new SendPacer(moving, WINDOW, () => undefined, c);
    const send = await p.hold(lease(100, 500));
    assert.deepEqual(sleeps, [100, 107, 114, 121], 'the first wait, then one more for each move, at most three');
    assert.equal(send?.plannedAt, 121);
  });

  it('unlimited queues (interval 0) go at once and report nothing', async () => {
    const clock = fakeClock(50);
    const q = fakeQueue(clock);
    const { pacer: p } = pacer(clock, q);
    const send = await p.hold(lease(100, 0));
    assert.equal(send?.plannedAt, 50);
    assert.equal(send.mayGo(50), true);
    send.wrote(51);
    send.done();
    assert.deepEqual(q.reports, []);
  });

  it('intervals of 3 ms and less (over 333/s) are held to their slot but not reported: the queue does not hold their next slot', async () => {
    const clock = fakeClock(0, 50); // wakes 50 ms late
    const q = fakeQueue(clock);
    const { pacer: p, counts } = pacer(clock, q);
    const send = await p.hold(lease(100, 2));
    assert.equal(send?.plannedAt, 100);
    assert.equal(send.mayGo(clock.t + 60_000), true, 'no window to miss');
    send.wrote(clock.t);
    p.finish(lease(100, 2));
    assert.deepEqual(q.reports, []);
    assert.deepEqual(counts, ['lateSends']);
    const early = fakeClock(0);
    assert.equal((await pacer(early, fakeQueue(early)).pacer.hold(lease(100, 0.01)))?.plannedAt, 100, 'never before its slot');
  });

  it('the margin after a send is 25 ms at any rate, unless the seed sets one', async () => {
    for (const [intervalMs, seedMs, want] of [[500, null, 25], [50, null, 25], [10, null, 25], [50, 40, 40], [500, 0, 0]] as const) {
      const c = fakeClock(0);
      const send = await new SendPacer(fakeQueue(c), WINDOW, () => undefined, c, seedMs).hold(lease(5, intervalMs));
      // (At 20/s too: the judge lags 16–18 ms now and then, whatever the rate.)
      assert.equal(send?.marginMs, want, `interval ${intervalMs} ms, seed margin ${seedMs}`);
    }
    // The seed's margin is the one reported with the write.
    const clock = fakeClock(0);
    const q = fakeQueue(clock);
    const p = new SendPacer(q, WINDOW, () => undefined, clock, 60);
    const send = await p.hold(lease(5, 50));
    assert.equal(send?.marginMs, 60);
    send?.mayGo(clock.t);
    send?.wrote(clock.t);
    assert.deepEqual(q.reports.map((r) => r.margin), [60]);
  });

  it('traces each write with the slot it was held to, before its report; a request never written is not traced', async () => {
    const clock = fakeClock(0, 3);
    const q = fakeQueue(clock);
    const traced: { queue: string; plannedAt: number; wroteAt: number; reportsBefore: number }[] = [];
    const p = new SendPacer(q, WINDOW, () => undefined, clock, null, (l, plannedAt, wroteAt) => traced.push({ queue: l.queue, plannedAt, wroteAt, reportsBefore: q.reports.length }));
    const send = await p.hold(lease(100, 500, 'written'));
    send?.mayGo(clock.t);
    send?.wrote(clock.t + 2);
    const unsent = await p.hold(lease(700, 500, 'unsent'));
    unsent?.done();
    assert.deepEqual(traced, [{ queue: 'written', plannedAt: 100, wroteAt: 105, reportsBefore: 0 }]);
    assert.deepEqual(q.reports.map((r) => [r.queue, r.sent]), [['written', true], ['unsent', false]]);
  });

  it('a request never written is reported not sent, once; one whose write began but was never seen to end counts as sent', async () => {
    const clock = fakeClock(0);
    const q = fakeQueue(clock);
    const { pacer: p } = pacer(clock, q);
    const unsent = await p.hold(lease(100, 500, 'a'));
    unsent?.done();
    unsent?.done();
    const begun = await p.hold(lease(200, 500, 'b'));
    assert.equal(begun?.mayGo(200), true);
    begun?.done();
    assert.deepEqual(
      q.reports.map((r) => [r.queue, r.sent]),
      [
        ['a', false],
        ['b', true],
      ],
    );
  });

  it('past its send window (less the slack) a slot is given up: not sent, reported unsent, counted', async () => {
    const clock = fakeClock(0, WINDOW); // wakes a whole window late
    const q = fakeQueue(clock);
    const { pacer: p, counts } = pacer(clock, q);
    assert.equal(await p.hold(lease(100, 500)), null);
    assert.deepEqual(
      q.reports.map((r) => r.sent),
      [false],
    );
    assert.deepEqual(counts, ['lateSlots']);
    // And at the write itself: held in time, but the write would come past the window.
    const c2 = fakeClock(0);
    const q2 = fakeQueue(c2);
    const { pacer: p2, counts: counts2 } = pacer(c2, q2);
    const send = await p2.hold(lease(100, 500));
    assert.equal(send?.mayGo(100 + WINDOW - PACING.windowSlackMs - 1), true);
    const late = await p2.hold(lease(100, 500, 'q2'));
    assert.equal(late?.mayGo(100 + WINDOW - PACING.windowSlackMs + 1), false);
    late?.done();
    assert.deepEqual(counts2, ['lateSlots']);
    assert.deepEqual(
      q2.reports.map((r) => [r.queue, r.sent]),
      [['q2', false]],
    );
  });

  it('a lease settled without a request of its own (a robots.txt wait, a disallowed URL) is reported never sent, once', async () => {
    const clock = fakeClock(0);
    const q = fakeQueue(clock);
    const { pacer: p } = pacer(clock, q);
    const idle = lease(100, 500, 'idle');
    p.finish(idle);
    p.finish(idle);
    const used = lease(100, 500, 'used');
    const send = await p.hold(used);
    assert.equal(send?.mayGo(100), true);
    send?.wrote(101);
    p.finish(used);
    p.finish(lease(100, 0, 'unlimited'));
    assert.deepEqual(
      q.reports.map((r) => [r.queue, r.sent]),
      [
        ['idle', false],
        ['used', true],
      ],
    );
  });

  it('a connection still being made renews the send window meanwhile: a slow connect is sent, not cut off', async () => {
    for (const answer of ['ok', 'stale'] as const) {
      const clock = fakeClock(0);
      const q = fakeQueue(clock, 0, answer);
      const counts: string[] = [];
      // A 300 ms window (cut off 100 ms before its end); the connection takes some 250 ms.
      const p = new SendPacer(q, 300, (_d, n) => counts.push(n), clock);
      const ticking = setInterval(() => (clock.t += 10), 10);
      const connect = new Promise<void>((r) => setTimeout(r, 250));
      const send = await p.hold(lease(100, 500), undefined, connect);
      clearInterval(ticking);
      assert.ok(q.renewals.length >= 1, `renewed ${q.renewals.length} times`);
      if (answer === 'ok') {
        clock.t = Math.max(clock.t, 310);
        assert.ok(send);
        assert.ok(clock.t > 100 + 300 - 100, 'past the first window (less its slack)');
        assert.equal(send.mayGo(clock.t), true, 'within the renewed one');
        assert.deepEqual(counts, []);
      } else {
        // The queue no longer held the slot for it: not sent.
        assert.equal(send, null);
        assert.deepEqual(counts, ['lateSlots']);
      }
    }
  });

  it('an aborted hold reports the slot unsent', async () => {
    const clock = fakeClock(0);
    const q = fakeQueue(clock);
    const { pacer: p } = pacer(clock, q);
    const stop = new AbortController();
    stop.abort();
    assert.equal(await p.hold(lease(100, 500), stop.signal), null);
    assert.deepEqual(
      q.reports.map((r) => r.sent),
      [false],
    );
  });
  it('a request held ahead is not sent once its domain asked this worker to pause (Retry-After), and is again after the pause', async () => {
    const clock = fakeClock(0);
    const q = fakeQueue(clock);
    const { pacer: p } = pacer(clock, q);
    const held = await p.hold(lease(200, 500, 'paused.example'));
    const other = await p.hold(lease(200, 500, 'other.example'));
    assert.ok(held && other);
    // The 429 of the domain's last request comes while this one waits for its slot.
    p.notePause('paused.example', 1000);
    assert.equal(held.mayGo(clock.t), false, 'held into the pause: not sent');
    assert.equal(other.mayGo(clock.t), true, "another domain's request goes");
    held.done();
    assert.deepEqual(q.reports.find((r) => r.queue === 'paused.example')?.sent, false, 'reported never sent: the slot is freed');
    assert.equal(p.pausedAt('paused.example', clock.t + 999), true);
    assert.equal(p.pausedAt('paused.example', clock.t + 1000), false, 'the pause ends when asked');
    // A shorter later pause does not shorten it.
    p.notePause('paused.example', 10);
    assert.equal(p.pausedAt('paused.example', clock.t + 500), true);
  });
});
