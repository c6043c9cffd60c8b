/** The send pacer on a fake clock: on time, late but coverable, too late, unlimited, late sends. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PACING, SendPacer, type LocalClock, type SlotQueue } from '../../src/crawl/pacer.js';
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

/** Local ms 0 = Redis ms 1,000,000; the pauses asked for are recorded. */
function fakeQueue(clock: { t: number }, uncertaintyMs = 0, pauseTakesMs = 0): SlotQueue & { pauses: { queue: string; ms: number; at: number }[] } {
  const pauses: { queue: string; ms: number; at: number }[] = [];
  return {
    pauses,
    clock: { uncertaintyMs, toRedis: (local: number) => local + 1_000_000, toLocal: (redis: number) => redis - 1_000_000 },
    pause: (_arena, queue, ms) => {
      pauses.push({ queue, ms, at: clock.t });
      clock.t += pauseTakesMs;
      return Promise.resolve(1_000_000 + clock.t + ms);
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

function pacer(clock: LocalClock & { t: number }, queue: SlotQueue): { pacer: SendPacer; counts: string[] } {
  const counts: string[] = [];
  return { pacer: new SendPacer(queue, 'a', (_d, n) => counts.push(n), clock), counts };
}

describe('send pacer', () => {
  it('sends at the slot plus the fixed delay plus the clock uncertainty, never before', async () => {
    const clock = fakeClock(0);
    const q = fakeQueue(clock, 0.4);
    const { pacer: p, counts } = pacer(clock, q);
    const at = await p.hold(lease(100, 500));
    assert.equal(at, 100 + PACING.sendDelayMs + 0.4);
    assert.equal(clock.t, at);
    assert.deepEqual(q.pauses, []);
    assert.deepEqual(counts, []);
  });

  it("maps the slot with the clock's estimate at send time, not the one its lease came with", async () => {
    // The lease arrived when a poor estimate put its slot at local 100; a better
    // one since (u 0.4) puts that Redis time at local 120. Sending by the old
    // mapping would be 20 ms before the slot: a gap short by 20 at the server.
    const clock = fakeClock(0);
    const q = fakeQueue(clock, 0.4);
    const shifted = { ...q, clock: { ...q.clock, toLocal: (redis: number) => redis - 1_000_000 + 20 } };
    const { pacer: p } = pacer(clock, shifted);
    const at = await p.hold(lease(100, 500));
    assert.equal(at, 120 + PACING.sendDelayMs + 0.4);
    assert.equal(clock.t, at);
  });

  it('waits again when the estimate moves the slot later while it waits (a bounded number of times)', async () => {
    const clock = fakeClock(0);
    const q = fakeQueue(clock);
    // Each wake sees the slot 7 ms later than before (new samples while asleep).
    let shift = 0;
    const moving: SlotQueue = { ...q, clock: { ...q.clock, toLocal: (redis: number) => redis - 1_000_000 + shift } };
    const sleeps: number[] = [];
    const c = { ...clock, sleepUntil: (at: number) => (sleeps.push(at), (clock.t = Math.max(clock.t, at)), (shift += 7), Promise.resolve()) };
    const p = new SendPacer(moving, 'a', () => undefined, c);
    const at = await p.hold(lease(100, 500));
    assert.deepEqual(sleeps, [102, 109, 116, 123], 'the first wait, then one more for each move, at most three');
    assert.equal(at, 123);
  });

  it('intervals within the send slack (100,000/s): never before the slot, but no send delay and no lateness checks', async () => {
    const clock = fakeClock(0, 50); // wakes 50 ms late
    const q = fakeQueue(clock);
    const { pacer: p, counts } = pacer(clock, q);
    const at = await p.hold(lease(100, 0.01));
    assert.equal(at, 150, 'sent when it woke, late: the gap after the one before is short by at most 0.01 ms');
    assert.deepEqual(q.pauses, []);
    assert.equal(p.gate(lease(100, 0.01), 100).mayGo(900), true);
    assert.deepEqual(counts, []);
    const early = fakeClock(0);
    assert.equal(await pacer(early, fakeQueue(early)).pacer.hold(lease(100, 0.01)), 100, 'not before its slot');
  });

  it('unlimited queues (interval 0) go at once', async () => {
    const clock = fakeClock(50);
    const { pacer: p } = pacer(clock, fakeQueue(clock));
    assert.equal(await p.hold(lease(100, 0)), 50);
  });

  it('a late send first pushes the next slot by the lateness (plus cover), then goes', async () => {
    const clock = fakeClock(0, 30); // wakes 30 ms late
    const q = fakeQueue(clock);
    const { pacer: p, counts } = pacer(clock, q);
    const at = await p.hold(lease(100, 500));
    assert.notEqual(at, null);
    const cover = 30 + PACING.pauseCoverMs;
    assert.equal(q.pauses.length, 1);
    // Next slot no sooner than served + lateness + interval (Redis ms), asked from now.
    assert.equal(q.pauses[0]?.ms, Math.ceil(100 + 1_000_000 + cover + 500 + 1 - (clock.t + 1_000_000)));
    assert.deepEqual(counts, ['lateSends']);
  });

  it('late past the slack when the next slot is already handed out (slots go out aheadMs early): given up, no push', async () => {
    const clock = fakeClock(0, 10);
    const q = fakeQueue(clock);
    const { pacer: p, counts } = pacer(clock, q);
    // interval 25 ms: the next slot went out at 100 + 25 − aheadMs, before this wake.
    assert.equal(await p.hold(lease(100, 25)), null);
    assert.deepEqual(q.pauses, []);
    assert.deepEqual(counts, ['lateSlots']);
  });

  it('late within the slack: sent, no push (the gap after it is short by at most the slack)', async () => {
    const clock = fakeClock(0, PACING.sendSlackMs - 0.5);
    const q = fakeQueue(clock);
    const { pacer: p, counts } = pacer(clock, q);
    assert.equal(await p.hold(lease(100, 500)), 100 + PACING.sendDelayMs);
    assert.deepEqual(q.pauses, []);
    assert.deepEqual(counts, []);
  });

  it('too late to cover (the next slot may be served already): the slot is given up', async () => {
    const clock = fakeClock(0, 600);
    const q = fakeQueue(clock);
    const { pacer: p, counts } = pacer(clock, q);
    assert.equal(await p.hold(lease(100, 500)), null);
    assert.deepEqual(q.pauses, []);
    assert.deepEqual(counts, ['lateSlots']);
  });

  it('late by little, but the pause call itself ran past the next slot: given up', async () => {
    const clock = fakeClock(0, 20);
    const q = fakeQueue(clock, 0, 200);
    const { pacer: p, counts } = pacer(clock, q);
    assert.equal(await p.hold(lease(100, 100)), null);
    assert.equal(q.pauses.length, 1);
    assert.deepEqual(counts, ['lateSlots']);
  });

  it('an aborted wait gives the slot up', async () => {
    const clock = fakeClock(0);
    const { pacer: p } = pacer(clock, fakeQueue(clock));
    const ac = new AbortController();
    ac.abort();
    assert.equal(await p.hold(lease(100, 500), ac.signal), null);
  });

  it('the send gate, as headers are written: within maxWriteLateMs go; later, go and push the next slot while it is far from being handed out; else not at all', async () => {
    const clock = fakeClock(150);
    const q = fakeQueue(clock);
    const { pacer: p, counts } = pacer(clock, q);
    assert.equal(p.gate(lease(100, 500), 110).mayGo(110), true);
    assert.equal(p.gate(lease(100, 500), 110).mayGo(110 + PACING.maxWriteLateMs - 0.5), true);
    assert.deepEqual(q.pauses, []);
    assert.equal(p.gate(lease(100, 500), 110).mayGo(110 + 10), true, 'late, but the next slot goes out only at 580: pushed');
    await new Promise((r) => setImmediate(r));
    assert.equal(q.pauses.length, 1);
    // interval 60 ms: the next slot goes out at 100 + 60 − aheadMs, too soon for a push to land first.
    assert.equal(p.gate(lease(100, 60), 110).mayGo(110 + PACING.maxWriteLateMs + 0.5), false, 'too late: not sent');
    assert.deepEqual(counts, ['lateSends', 'lateSlots']);
    assert.equal(p.gate(lease(100, 0), 110).mayGo(900), true, 'unlimited: no slot to keep');
    const uncertain = pacer(clock, fakeQueue(clock, 2));
    assert.equal(uncertain.pacer.gate(lease(100, 60), 110).mayGo(110), false, 'the clock spread counts as lateness');
  });
  it('a write later than the gate judged (the process stalled between the check and the write) pushes the next slot past it, if that slot is not out yet', async () => {
    const clock = fakeClock(102);
    const q = fakeQueue(clock);
    const { pacer: p, counts } = pacer(clock, q);
    // Planned at the slot's send time (served 100 + the send delay); checked on time, written 20 ms later.
    const onTime = p.gate(lease(100, 500), 100 + PACING.sendDelayMs);
    assert.equal(onTime.mayGo(102), true);
    onTime.wrote(102.2);
    assert.equal(q.pauses.length, 0, 'written as checked: nothing to push');
    // (Another domain: this one's request of the same slot would be refused as following the first too soon.)
    const stalled = p.gate(lease(100, 500, 'q2'), 100 + PACING.sendDelayMs);
    assert.equal(stalled.mayGo(102), true);
    clock.t = 122;
    stalled.wrote(122);
    await new Promise((r) => setImmediate(r));
    assert.equal(q.pauses.length, 1);
    // The next slot (Redis ms) no sooner than a whole interval after the write.
    const nextSlot = 1_000_000 + clock.t + (q.pauses[0]?.ms ?? 0);
    assert.ok(nextSlot >= 1_000_000 + 122 + 500, `next slot ${nextSlot - 1_000_000}`);
    assert.deepEqual(counts, ['lateSends']);
  });

  it('a late write the check already pushed for is not pushed again; one past the next slot is counted as a short gap', async () => {
    const clock = fakeClock(150);
    const q = fakeQueue(clock);
    const { pacer: p, counts } = pacer(clock, q);
    const late = p.gate(lease(100, 500), 102);
    assert.equal(late.mayGo(112), true, 'late by 10: pushed by 10 + cover');
    late.wrote(112 + PACING.pauseCoverMs - 0.5);
    await new Promise((r) => setImmediate(r));
    assert.equal(q.pauses.length, 1, 'the write within what the push covered');
    // interval 60: the next slot goes out at 100 + 60 − aheadMs = 140, before this write.
    const tooLate = p.gate(lease(100, 60, 'q2'), 102);
    assert.equal(tooLate.mayGo(102), true);
    tooLate.wrote(145);
    await new Promise((r) => setImmediate(r));
    assert.equal(q.pauses.length, 1);
    assert.deepEqual(counts, ['lateSends', 'shortGaps']);
  });

  it("a write that went late after the next slot was out keeps this worker's request of that slot from crowding it", async () => {
    const clock = fakeClock(102);
    const q = fakeQueue(clock);
    const { pacer: p, counts } = pacer(clock, q);
    // 50/s: the next slot (120) went out with this one (aheadMs 20), so the stalled write cannot push it.
    const stalled = p.gate(lease(100, 20), 102);
    assert.equal(stalled.mayGo(102), true);
    stalled.wrote(117);
    await new Promise((r) => setImmediate(r));
    assert.equal(q.pauses.length, 0);
    // The next slot's request, on time by its slot (122), would follow that write by 5 ms: not sent.
    assert.equal(p.gate(lease(120, 20), 122).mayGo(122), false);
    // A whole interval (less the slack) after the late write, the domain's next request goes.
    const later = p.gate(lease(140, 20), 142);
    assert.equal(later.mayGo(142), true);
    later.wrote(142);
    // Writes on time keep no request from its slot.
    assert.equal(p.gate(lease(160, 20), 162).mayGo(162), true);
    assert.deepEqual(counts, ['shortGaps', 'lateSlots']);
  });
});
