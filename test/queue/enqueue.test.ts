/** Enqueue: batches, the atomic dedupe hook, and racing producers. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { FairQueue, type Lease, type QueueLimit } from '../../src/queue/index.js';
import { arenaKey, arenaKeys, shardKey } from '../../src/queue/keys.js';
import { ScriptRunner } from '../../src/queue/scripts.js';
import { freshArena, useRedis } from '../helpers/fixture.js';
import { scriptCalls } from '../helpers/redis.js';

const fx = useRedis();
const BITS = 1 << 24;
const K = 10;

/** k positions from sha1: independent enough for a test, and deterministic. */
function positions(item: string): number[] {
  const h = createHash('sha1').update(item).digest();
  return Array.from({ length: K }, (_, i) => ((h.readUInt32BE((i * 2) % 16) ^ Math.imul(i, 0x9e3779b1)) >>> 0) % BITS);
}

/** The same, all in one 512-bit block, as the crawler's blocked filter puts them (the seen-check reads those). */
function blockedPositions(item: string): number[] {
  const p = positions(item);
  const block = (p[0] ?? 0) - ((p[0] ?? 0) % 512);
  return p.map((x) => block + (x % 512));
}

/** The fields of an arena's item storage (sealed chunks, items put back). */
const redisItems = (arena: string): Promise<string[]> => fx.redis.hkeys(arenaKey('weir', arena, 'items'));
const qidOf = async (arena: string, queue: string): Promise<string> => String(await fx.redis.hget(arenaKey('weir', arena, 'qids'), queue));

/** A fresh arena of 50 unlimited queues, q0…q49, with a dedupe bitmap. */
async function fiftyQueues(): Promise<{ q: FairQueue; arena: string; names: string[] }> {
  const q = fx.queue();
  const arena = freshArena();
  const names = Array.from({ length: 50 }, (_, i) => `q${i}`);
  await q.setLimits(arena, Object.fromEntries(names.map((n) => [n, { rate: 'unlimited' as const }])));
  await q.configureDedupe(arena, { bits: BITS, hashes: K });
  return { q, arena, names };
}

/** Every lease the arena serves now, in order, each committed. */
async function takeAll(q: FairQueue, arena: string): Promise<Lease[]> {
  const got: Lease[] = [];
  for (let r = await q.dequeue(arena); r.lease; r = await q.dequeue(arena)) {
    got.push(r.lease);
    await q.commit(r.lease);
  }
  return got;
}

describe('enqueue', () => {
  it('appends in order and counts what it added', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    assert.equal(await q.enqueue(arena, 'a', ['1', '2', '3']), 3);
    assert.equal(await q.enqueue(arena, 'a', ['4']), 1);
    const got = (await takeAll(q, arena)).map((l) => l.item);
    assert.deepEqual(got, ['1', '2', '3', '4']);
  });

  it('takes batches over the per-call limit (2,500 items) and keeps binary-safe, multi-line items intact', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    const items = Array.from({ length: 2500 }, (_, i) => `line ${i}\n:colon:${'é'.repeat(i % 7)}`);
    assert.equal(await q.enqueue(arena, 'a', items), 2500);
    const first = await q.dequeue(arena);
    assert.equal(first.lease?.item, items[0]);
    assert.equal((await q.stats(arena)).queued, 2499);
  });

  it('dedupe: an item whose bits are all set already is dropped, atomically with setting them', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    assert.equal(await q.configureDedupe(arena, { bits: BITS, hashes: K }), true);
    assert.equal(await q.configureDedupe(arena, { bits: BITS, hashes: K }), false);
    await assert.rejects(q.configureDedupe(arena, { bits: BITS * 2, hashes: K }), { code: 'WEIR_DEDUPE_MISMATCH' });
    const items = ['x', 'y', 'x', 'z', 'y'];
    assert.equal(await q.enqueue(arena, 'a', items, { dedupe: items.map(positions) }), 3);
    assert.equal(await q.enqueue(arena, 'a', ['x', 'w'], { dedupe: ['x', 'w'].map(positions) }), 1);
    const s = await q.stats(arena);
    assert.deepEqual(s.dedupe, { bits: BITS, hashes: K });
    assert.equal(s.queued, 4);
  });

  it('dedupe: while many items come back as seen, the bitmap is read first and seen items are not sent (no script call when all are); new ones still go through the script', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await q.configureDedupe(arena, { bits: BITS, hashes: K });
    const batch = (from: number, n: number): string[] => Array.from({ length: n }, (_, i) => `item-${from + i}`);
    const enqueue = (items: string[]): Promise<number> => q.enqueue(arena, 'a', items, { dedupe: items.map(blockedPositions) });
    assert.equal(await enqueue(batch(0, 100)), 100);
    assert.equal(q.counters.seenReads, 0, 'all new: no read');
    // Seen again: the script drops them, and the share of drops turns the read on.
    assert.equal(await enqueue(batch(0, 100)), 0);
    assert.equal(q.counters.seenReads, 0);
    const calls = await scriptCalls(fx.redis);
    assert.equal(await enqueue(batch(0, 100)), 0);
    assert.equal(q.counters.seenReads, 1);
    assert.equal(await scriptCalls(fx.redis), calls, 'all seen: read, and no script call');
    // Half seen: only the new half is sent, and enqueued.
    assert.equal(await enqueue([...batch(50, 50), ...batch(100, 50)]), 50);
    assert.equal(await scriptCalls(fx.redis), calls + 1);
    assert.equal(q.counters.seenSkipped, 150);
    assert.equal((await q.stats(arena)).queued, 150);
    // All new again: the share of drops falls, and the reads stop.
    for (let i = 0; i < 20; i++) assert.equal(await enqueue(batch(1000 + 100 * i, 100)), 100);
    const reads = q.counters.seenReads;
    assert.equal(await enqueue(batch(9000, 100)), 100);
    assert.equal(q.counters.seenReads, reads, 'few drops lately: no read');
  });

  for (const form of ['spread', 'blocked'] as const) {
    it(`two clients racing to enqueue the same 10,000 items enqueue exactly 10,000 (bits ${form}${form === 'blocked' ? ': the seen items read first' : ''})`, async () => {
      const arena = freshArena();
      const setup = fx.queue();
      await setup.setLimits(arena, { a: { rate: 'unlimited' } });
      await setup.configureDedupe(arena, { bits: BITS, hashes: K });
      const items = Array.from({ length: 10_000 }, (_, i) => `https://example.test/page/${i}`);
      const pos = items.map(form === 'blocked' ? blockedPositions : positions);
      const clients = [fx.server.client(), fx.server.client()];
      const producers = clients.map((c) => new FairQueue(c));
      // Both producers send the whole set, batch by batch, at the same time.
      const added = await Promise.all(
        producers.map(async (p) => {
          let n = 0;
          for (let i = 0; i < items.length; i += 250) {
            n += await p.enqueue(arena, 'a', items.slice(i, i + 250), { dedupe: pos.slice(i, i + 250) });
          }
          return n;
        }),
      );
      assert.equal((added[0] ?? 0) + (added[1] ?? 0), 10_000);
      assert.equal((await setup.stats(arena)).queued, 10_000);
      // The filter's fill, counted as bits are set, is the bitmap's own count.
      assert.equal(await setup.dedupeBitsSet(arena), await fx.redis.bitcount(arenaKey('weir', arena, 'dedupe')));
      const reads = producers.reduce((n, p) => n + p.counters.seenReads, 0);
      if (form === 'blocked') assert.ok(reads > 0, 'the producer behind found most of its items seen, and read first');
      else assert.equal(reads, 0, 'bits spread wider than a block are never read');
      for (const c of clients) c.disconnect();
    });
  }

  it('concurrent enqueues to many queues share script calls (50 in one turn: two, halved), each queue in its own order', async () => {
    const { q, arena, names } = await fiftyQueues();
    const calls = (): Promise<number> => scriptCalls(fx.redis);
    const before = await calls();
    // One turn of the event loop: 50 queues × 3 items, one of them a repeat of another queue's.
    const added = await Promise.all(names.map((n, i) => q.enqueue(arena, n, [`${n}/1`, `${n}/2`, `q${(i + 1) % 50}/1`], { dedupe: [`${n}/1`, `${n}/2`, `q${(i + 1) % 50}/1`].map(positions) })));
    assert.equal(await calls(), before + 2, 'one script call for each half of the turn (DEFAULTS.enqueueHalveFrom: 32)');
    // Each item is new once, in the call's order (queue by queue): q_i's third item is
    // q_{i+1}'s first, so q_i keeps it and q_{i+1}'s own is dropped; q49's third is q0's first.
    assert.deepEqual(added, names.map((_, i) => (i === 0 ? 3 : i === 49 ? 1 : 2)));
    const seen = new Map<string, string[]>();
    for (const l of await takeAll(q, arena)) seen.set(l.queue, [...(seen.get(l.queue) ?? []), l.item]);
    assert.deepEqual(seen.get('q0'), ['q0/1', 'q0/2', 'q1/1']);
    assert.deepEqual(seen.get('q3'), ['q3/2', 'q4/1']);
    assert.deepEqual(seen.get('q49'), ['q49/2']);
  });

  it('enqueueAll: many queues at once, as enqueue each (counts in order, dedupe, options, one script call); a bad one refused before anything is sent', async () => {
    const { q, arena, names } = await fiftyQueues();
    const before = await scriptCalls(fx.redis);
    const items = (n: string, i: number): string[] => [`${n}/1`, `${n}/2`, `q${(i + 1) % 50}/1`];
    const groups = names.map((n, i) => ({ queue: n, items: items(n, i), options: { dedupe: items(n, i).map(positions) } }));
    // Two queues made by their enqueues, each with its own limits, a known queue given limits it keeps its own against, and one with nothing to add, among them.
    const made = { queue: 'made', items: ['m/1'], options: { dedupe: [positions('m/1')], create: { rate: 2, maxInFlight: 1 } } };
    const other = { queue: 'other', items: ['o/1'], options: { dedupe: [positions('o/1')], create: { rate: 'unlimited' as const, maxInFlight: 3 } } };
    const known = { queue: 'q8', items: ['q8/3'], options: { dedupe: [positions('q8/3')], create: { rate: 9, maxInFlight: 9 } } };
    const added = await q.enqueueAll(arena, [...groups, { queue: 'q7', items: [] }, made, other, known]);
    assert.deepEqual(added, [...names.map((_, i) => (i === 0 ? 3 : i === 49 ? 1 : 2)), 0, 1, 1, 1]);
    assert.equal(await scriptCalls(fx.redis), before + 1, "one script call (one caller's: never halved), the queues it makes with their limits in it");
    const seen = new Map<string, string[]>();
    for (const l of await takeAll(q, arena)) seen.set(l.queue, [...(seen.get(l.queue) ?? []), l.item]);
    assert.deepEqual([seen.get('q0'), seen.get('q3'), seen.get('made'), seen.get('other')], [['q0/1', 'q0/2', 'q1/1'], ['q3/2', 'q4/1'], ['m/1'], ['o/1']]);
    const limits = (await q.namedQueueStats(arena, ['made', 'other', 'q8'])).map((x) => [x.name, x.rate, x.maxInFlight]).sort();
    assert.deepEqual(limits, [['made', 2, 1], ['other', 'unlimited', 3], ['q8', 'unlimited', 0]]);
    await assert.rejects(q.enqueueAll(arena, [{ queue: 'q1', items: ['fine'] }, { queue: '', items: ['x'] }]), { code: 'WEIR_BAD_NAME' });
    await assert.rejects(q.enqueueAll(arena, [{ queue: 'q1', items: ['fine'] }, { queue: 'nope', items: ['x'] }]), { code: 'WEIR_UNKNOWN_QUEUE' });
    assert.equal((await q.stats(arena)).queued, 0, 'nothing of a refused batch written (an unknown queue refuses its whole script call)');
  });

  it('one script call that makes 1,000 queues (the most it takes) makes every one ready, served in the order they came', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, {});
    const names = Array.from({ length: 1000 }, (_, i) => `site-${i}`);
    // (The raw script: the client carries at most 256 requests a call. They go into `ready` together, after the loop that makes them.)
    const args = [1, 0, names.length, ...names.flatMap((n) => [n, 1]), ...names.map((n) => `${n}/`), 'creates', ...names.flatMap(() => ['unlimited', 0])];
    assert.equal(String(await new ScriptRunner(fx.redis).run('enqueue', arenaKeys('weir', arena), args)), '1'.repeat(1000));
    const served = await takeAll(q, arena);
    assert.deepEqual(served.map((l) => l.queue), names);
  });

  it('enqueue into an unknown queue is refused and writes nothing', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await assert.rejects(q.enqueue(arena, 'nope', ['x']), { code: 'WEIR_UNKNOWN_QUEUE' });
    assert.equal((await q.stats(arena)).queued, 0);
  });


  it('with create, an unknown queue is made with those limits in the enqueue itself: once under racing clients, and a known queue keeps its own', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { known: { rate: 5, maxInFlight: 3 } });
    const clients = Array.from({ length: 4 }, () => fx.queue());
    // Four clients meet the same new queues at once, each with its own items, one with other limits.
    const added = await Promise.all(
      clients.map((c, i) =>
        Promise.all([
          c.enqueue(arena, 'fresh', [`f${i}`], { create: { rate: 2, maxInFlight: 1 } }),
          c.enqueue(arena, 'known', [`k${i}`], { create: { rate: 'unlimited', maxInFlight: 9 } }),
        ]),
      ),
    );
    assert.deepEqual(added.flat(), [1, 1, 1, 1, 1, 1, 1, 1]);
    const byName = new Map((await q.allQueueStats(arena)).map((s) => [s.name, s]));
    assert.equal(byName.size, 2, 'fresh was created once');
    assert.deepEqual([byName.get('fresh')?.rate, byName.get('fresh')?.maxInFlight, byName.get('fresh')?.queued], [2, 1, 4]);
    assert.deepEqual([byName.get('known')?.rate, byName.get('known')?.maxInFlight, byName.get('known')?.queued], [5, 3, 4]);
    // The new queue is served under its rate from its first item.
    const first = await q.dequeue(arena, { leaseMs: 5000 });
    const second = await q.dequeue(arena, { leaseMs: 5000 });
    assert.ok(first.lease && second.lease);
    assert.notEqual(first.lease.queue, second.lease.queue, 'fresh is in the schedule at once, beside known');
  });

  it('lower: a shared queue tightens to the strictest limits its callers bring, whatever their order, and never loosens', async () => {
    const q = fx.queue();
    const arena = freshArena();
    const clients = Array.from({ length: 4 }, () => fx.queue());
    const specs = [
      { rate: 10, maxInFlight: 0 },
      { rate: 2, maxInFlight: 5 },
      { rate: 'unlimited' as const, maxInFlight: 3 },
      { rate: 4, maxInFlight: 0 },
    ];
    await Promise.all(clients.map((c, i) => c.enqueue(arena, 'server', [`s${i}`], { create: specs[i] as QueueLimit, lower: true })));
    const limits = async (): Promise<[number | 'unlimited' | undefined, number | undefined]> => {
      const s = (await q.allQueueStats(arena)).find((x) => x.name === 'server');
      return [s?.rate, s?.maxInFlight];
    };
    assert.deepEqual(await limits(), [2, 3], 'the lowest rate and the lowest cap, whichever came first');
    // Looser limits later change nothing, by enqueue or by setLimits with lower; stricter ones do.
    await q.enqueue(arena, 'server', ['s4'], { create: { rate: 50, maxInFlight: 9 }, lower: true });
    await q.setLimits(arena, { server: { rate: 'unlimited' } }, { lower: true });
    assert.deepEqual(await limits(), [2, 3]);
    await q.setLimits(arena, { server: { rate: 1, maxInFlight: 0 }, fresh: { rate: 3 } }, { lower: true });
    assert.deepEqual(await limits(), [1, 3]);
    assert.equal((await q.allQueueStats(arena)).find((x) => x.name === 'fresh')?.rate, 3, 'an unknown queue is created as given');
    // Served at the lowered rate: the second serve a whole second after the first.
    const first = await q.dequeue(arena, { leaseMs: 5000 });
    const second = await q.dequeue(arena, { leaseMs: 5000 });
    assert.ok(first.lease && !second.lease, 'one serve per interval');
    assert.ok((second.waitMs ?? 0) > 900, `next slot ${String(second.waitMs)} ms away`);
    await assert.rejects(q.enqueue(arena, 'server', ['x'], { lower: true }), { code: 'WEIR_BAD_ARGS' });
  });

  it('purge drops every queued item (chunks and items put back) at once, leaves leases and other queues, and the queue takes items again', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' }, b: { rate: 'unlimited' } });
    // Several sealed chunks, an open one, and two items put back at the head.
    assert.equal(await q.enqueue(arena, 'a', Array.from({ length: 700 }, (_, i) => `a${i}-${'x'.repeat(i % 40)}`)), 700);
    await q.enqueue(arena, 'b', ['b0', 'b1']);
    // Three leases of a (b's, taken in turn between them, are held too).
    const held: Lease[] = [];
    while (held.filter((l) => l.queue === 'a').length < 3) {
      const r = await q.dequeue(arena, { leaseMs: 60_000 });
      assert.ok(r.lease);
      held.push(r.lease);
    }
    const [back1, back2, ...kept] = held.filter((l) => l.queue === 'a');
    assert.ok(back1 && back2 && kept.length === 1);
    await q.release(back1);
    await q.release(back2);
    const before = await q.stats(arena);
    assert.equal(await q.purge(arena, 'a'), 699, 'every queued item of a: 700 less the one still leased');
    assert.equal(await q.purge(arena, 'a'), 0);
    assert.equal(await q.purge(arena, 'nope'), 0);
    const after = await q.stats(arena);
    assert.equal(after.queued, before.queued - 699);
    assert.equal(after.leased, before.leased);
    const items = await redisItems(arena);
    const qid = await qidOf(arena, 'a');
    assert.ok(items.every((f) => !f.startsWith(`${qid}:`)), `no item storage of a left: ${items.join(' ')}`);
    // The lease still held commits; a takes new items, in order; b was untouched.
    assert.equal(await q.commit(kept[0] as Lease), 'ok');
    await q.enqueue(arena, 'a', ['n1', 'n2']);
    const got = (await takeAll(q, arena)).map((l) => l.item);
    assert.deepEqual(got.filter((i) => i.startsWith('n')), ['n1', 'n2']);
    assert.equal(got.filter((i) => i.startsWith('a')).length, 0);
    assert.equal((await q.stats(arena)).queued, 0);
  });

  it('front: items go to the front band, served before every item at the tail (the call\'s first first), through dedupe like the rest', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await q.configureDedupe(arena, { bits: BITS, hashes: K });
    const add = (items: string[], front = false): Promise<number> => q.enqueue(arena, 'a', items, { dedupe: items.map(positions), front });
    assert.equal(await add(['deep1', 'deep2', 'deep3']), 3);
    assert.equal(await add(['s1', 's2', 'deep1'], true), 2, 'deep1 was seen');
    assert.equal(await add(['s3'], true), 1);
    assert.equal((await q.stats(arena)).queued, 6);
    assert.deepEqual((await takeAll(q, arena)).map((l) => l.item), ['s3', 's1', 's2', 'deep1', 'deep2', 'deep3']);
    const s = await q.stats(arena);
    assert.deepEqual([s.queued, s.done, s.enqueued], [0, 6, 6]);
  });

  it("lower in one call: each queue tightens to its own request's limits, and a queue given none keeps its own", async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 10, maxInFlight: 4 }, b: { rate: 10, maxInFlight: 4 }, c: { rate: 10, maxInFlight: 4 } });
    await q.enqueueAll(arena, [
      { queue: 'a', items: ['a1'], options: { create: { rate: 2, maxInFlight: 0 }, lower: true } },
      { queue: 'b', items: ['b1'], options: { create: { rate: 20, maxInFlight: 1 }, lower: true } },
      { queue: 'c', items: ['c1'], options: { lower: false } },
      { queue: 'd', items: ['d1'], options: { create: { rate: 5, maxInFlight: 2 }, lower: true } },
    ]);
    const rows = (await q.allQueueStats(arena)).map((x) => [x.name, x.rate, x.maxInFlight]).sort();
    assert.deepEqual(rows, [['a', 2, 4], ['b', 10, 1], ['c', 10, 4], ['d', 5, 2]]);
  });

  it("the script's 'creates': each group's own limits, '' for a group whose queue must exist; an unknown queue without any, or a bad rate, refused before anything is written", async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { known: { rate: 4, maxInFlight: 2 } });
    const runner = new ScriptRunner(fx.redis);
    const keys = arenaKeys('weir', arena);
    const snapshot = async (): Promise<string> => JSON.stringify(Object.entries(await fx.redis.hgetall(shardKey('weir', arena, 'queues'))).sort());
    const before = await snapshot();
    await assert.rejects(runner.run('enqueue', keys, [1, 0, 2, 'known', 1, 'new', 1, 'k1', 'n1', 'creates', 3, 1, '', 0]), { code: 'WEIR_UNKNOWN_QUEUE' });
    await assert.rejects(runner.run('enqueue', keys, [1, 0, 2, 'known', 1, 'new', 1, 'k1', 'n1', 'creates', '', 0, 'fast', 1]), { code: 'WEIR_BAD_RATE' });
    await assert.rejects(runner.run('enqueue', keys, [1, 0, 2, 'known', 1, 'new', 1, 'k1', 'n1', 'creates', '', 0, 2]), { code: 'WEIR_BAD_ARGS' }, 'a pair short');
    assert.equal(await snapshot(), before);
    assert.equal(String(await runner.run('enqueue', keys, [1, 0, 3, 'known', 1, 'new', 1, 'free', 1, 'k1', 'n1', 'f1', 'creates', '', 0, 3, 1, 'unlimited', 5])), '111');
    const rows = (await q.allQueueStats(arena)).map((x) => [x.name, x.rate, x.maxInFlight, x.queued]).sort();
    assert.deepEqual(rows, [['free', 'unlimited', 5, 1], ['known', 4, 2, 1], ['new', 3, 1, 1]]);
  });

  it("the script's 'creates' in one call: groups sharing a rate or a cap each keep their own pair (the script checks each pair once a call); a bad cap after a good one of the same rate is refused", async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, {});
    const runner = new ScriptRunner(fx.redis);
    const keys = arenaKeys('weir', arena);
    const names = ['a', 'b', 'c', 'd', 'e'];
    const pairs = [3, 1, 3, 2, 5, 1, 3, 1, 'unlimited', 2];
    await assert.rejects(runner.run('enqueue', keys, [1, 0, 2, 'a', 1, 'b', 1, 'a1', 'b1', 'creates', 3, 1, 3, -1]), { code: 'WEIR_BAD_ARGS' });
    await assert.rejects(runner.run('enqueue', keys, [1, 0, 2, 'a', 1, 'b', 1, 'a1', 'b1', 'creates', 3, 1, 'x', 1]), { code: 'WEIR_BAD_RATE' });
    assert.equal((await q.stats(arena)).queues, 0, 'nothing written by a refused call');
    // (A group of two items among groups of one: the count's own path.)
    const args = [1, 0, 5, 'a', 1, 'b', 2, 'c', 1, 'd', 1, 'e', 1, 'a1', 'b1', 'b2', 'c1', 'd1', 'e1', 'creates', ...pairs];
    assert.equal(String(await runner.run('enqueue', keys, args)), '111111');
    const rows = (await q.allQueueStats(arena)).map((x) => [x.name, x.rate, x.maxInFlight, x.queued]).sort();
    assert.deepEqual(rows, names.map((n, i) => [n, pairs[2 * i], pairs[2 * i + 1], n === 'b' ? 2 : 1]));
  });

  it('a bad create spec is refused before anything is written', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await assert.rejects(q.enqueue(arena, 'b', ['x'], { create: { rate: 0 } }), { code: 'WEIR_BAD_RATE' });
    await assert.rejects(q.enqueue(arena, 'b', ['x'], { create: { rate: 1, maxInFlight: -1 } }), { code: 'WEIR_BAD_ARGS' });
    assert.equal((await q.stats(arena)).queues, 1);
  });
  it("a queue read and refilled in turn (a crawl's) keeps its open chunk to its queued items, in order, with items put back", async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    const qid = await qidOf(arena, 'a');
    // Entries of 54 bytes (4 of length, 50 of item): 3 queued, then one out and one in, 300 times.
    const itemOf = (n: number): string => `${n}:`.padEnd(50, 'x');
    const model: string[] = [];
    let made = 0;
    const add = async (): Promise<void> => {
      const item = itemOf(made++);
      assert.equal(await q.enqueue(arena, 'a', [item]), 1);
      model.push(item);
    };
    for (let i = 0; i < 3; i++) await add();
    let longest = 0;
    for (let step = 0; step < 300; step++) {
      const r = await q.dequeue(arena);
      assert.equal(r.lease?.item, model.shift(), `step ${step}`);
      if (step % 7 === 3) {
        // Put back at the head (the front stack, not the chunk): served next.
        assert.equal(await q.release(r.lease as Lease), 'ok');
        model.unshift((r.lease as Lease).item);
      } else {
        assert.equal(await q.commit(r.lease as Lease), 'ok');
        await add();
      }
      longest = Math.max(longest, await fx.redis.hstrlen(arenaKey('weir', arena, 'queues'), `${qid}:t`));
    }
    // Before the read part was dropped it grew to a whole chunk (1,020 bytes) and was sealed, again and again.
    assert.ok(longest <= 8 * 54, `the open chunk reached ${longest} bytes with 3 or 4 items queued`);
    assert.deepEqual(await redisItems(arena), [], 'no chunk was sealed');
    assert.deepEqual((await takeAll(q, arena)).map((l) => l.item), model);
    assert.equal((await q.stats(arena)).queued, 0);
  });
  it('keeps exact order through chunk boundaries, mixed sizes and head pushes (checked against a model)', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    // A small deterministic PRNG so a failure can be replayed.
    let seed = 12345;
    const rnd = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    const sizes = [0, 1, 7, 60, 200, 1000, 4075, 4100, 65536];
    const model: string[] = []; // head first
    const held: Lease[] = [];
    let made = 0;
    for (let step = 0; step < 600; step++) {
      const op = rnd(10);
      if (op < 4) {
        const batch = Array.from({ length: 1 + rnd(40) }, () => `${made++}:`.padEnd(sizes[rnd(sizes.length)] ?? 1, 'x').slice(0, 65536));
        assert.equal(await q.enqueue(arena, 'a', batch), batch.length);
        model.push(...batch);
      } else if (op < 6 || held.length === 0) {
        const r = await q.dequeue(arena);
        const want = model.shift();
        assert.equal(r.lease?.item, want, `step ${step}`);
        if (r.lease) held.push(r.lease);
      } else if (op < 8 && model.length > 0) {
        // A commit carried in the next take (only when an item is there: a take waits for one): the call reads the queue's record and chunks with the meta fields.
        const { committed, next } = q.commitAndTake(held.pop() as Lease);
        const l = await next;
        assert.equal(await committed, 'ok');
        assert.equal(l?.item, model.shift(), `step ${step}`);
        if (l) held.push(l);
      } else if (held.length > 0) {
        const l = held.splice(rnd(held.length), 1)[0] as Lease;
        if (op === 8) {
          assert.equal(await q.commit(l), 'ok');
        } else {
          assert.equal(await q.release(l), 'ok');
          model.unshift(l.item);
        }
      }
    }
    for (const l of held) await q.commit(l);
    for (;;) {
      const r = await q.dequeue(arena);
      assert.equal(r.lease?.item, model.shift());
      if (!r.lease) break;
      await q.commit(r.lease);
    }
    assert.equal(model.length, 0);
    // Drained: no chunk or front entry is left behind, nor a head chunk beside the record.
    assert.equal(await fx.redis.hlen(`weir:{${arena}}:items`), 0);
    assert.equal((await fx.redis.hget(`weir:{${arena}}:queues`, '1:h')) ?? '', '');
    assert.equal((await q.stats(arena)).queued, 0);
  });
});
