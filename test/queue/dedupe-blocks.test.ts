/**
 * Dedupe positions in block form (lua/enqueue.lua 'b<k>'): an item whose
 * positions all fall in one 512-bit block (a blocked Bloom filter's, as
 * the crawler's) goes as one packed argument, read and written with
 * GETRANGE/SETRANGE, instead of k decimal positions for BITFIELD. Both
 * forms must set the same bits and drop the same items.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { arenaKeys, shardKey } from '../../src/queue/keys.js';
import { shardOf } from '../../src/queue/shards.js';
import { ScriptRunner } from '../../src/queue/scripts.js';
import { enqueueCalls } from '../../src/queue/enqueue-batch.js';
import { freshArena, useRedis } from '../helpers/fixture.js';

const fx = useRedis();

/** k distinct positions in one 512-bit block of a bitmap of `bits`, from sha256 (deterministic). */
function blockPositions(item: string, bits: number, k: number): number[] {
  const h = createHash('sha256').update(item).digest();
  const block = h.readUInt32BE(0) % Math.floor(bits / 512);
  const out: number[] = [];
  for (let i = 0; out.length < k; i++) {
    const p = block * 512 + ((h.readUInt16BE(4 + ((2 * i) % 26)) + i * 97) % 512);
    if (!out.includes(p)) out.push(p);
  }
  return out;
}

/** The bits set in an arena's bitmap (its first shard), as positions. */
async function setBits(arena: string, tag = arena): Promise<number[]> {
  const raw = (await fx.redis.getBuffer(shardKey('weir', tag, 'dedupe'))) ?? Buffer.alloc(0);
  const out: number[] = [];
  raw.forEach((byte, i) => {
    for (let b = 0; b < 8; b++) if (byte & (0x80 >> b)) out.push(i * 8 + b);
  });
  return out;
}

describe('dedupe positions in block form', () => {
  it('sets exactly the bits the same positions set one by one, and drops the same items (repeats in a call, and in later calls)', async () => {
    const q = fx.queue();
    const bits = 512 * 64;
    const items = Array.from({ length: 300 }, (_, i) => `https://s.test/p/${i % 240}`);
    const dedupe = items.map((u) => blockPositions(u, bits, 14));
    const flags: Record<string, number[]> = {};
    for (const form of ['blocks', 'positions'] as const) {
      const arena = freshArena();
      await q.setLimits(arena, { a: { rate: 'unlimited' } });
      await q.configureDedupe(arena, { bits, hashes: 14 });
      const runner = new ScriptRunner(fx.redis);
      const keys = arenaKeys('weir', arena);
      // The client's own choice of form, and the other forced (one call each of 150, twice).
      const counts: number[] = [];
      for (const part of [items.slice(0, 150), items.slice(150)]) {
        const at = items.indexOf(part[0] as string);
        const req = { queue: 'a', items: part, dedupe: dedupe.slice(at, at + part.length) };
        const [call] = enqueueCalls([req], form === 'blocks' ? 'b14' : 14, 1000, [1]);
        const reply = String(await runner.run('enqueue', keys, (call as { args: (string | number | Buffer)[] }).args));
        counts.push(...[...reply].map(Number));
      }
      flags[form] = counts;
      flags[`${form} bits`] = await setBits(arena);
      assert.equal(await q.dedupeBitsSet(arena), flags[`${form} bits`]?.length, `${form}: the bits counted as set are the bits set`);
    }
    assert.deepEqual(flags.blocks, flags.positions);
    assert.deepEqual(flags['blocks bits'], flags['positions bits']);
    // 240 distinct URLs among the 300: each new once.
    assert.equal(flags.blocks?.filter((f) => f === 1).length, 240);
    assert.deepEqual(flags['blocks bits'], [...new Set(dedupe.flat())].sort((a, b) => a - b));
  });

  it('reads a bitmap shorter than a block (cut, or gone with a Redis that lost its data) as zeros past its end: the item new, its bits set, then seen', async () => {
    const q = fx.queue();
    const arena = freshArena();
    const bits = 512 * 8;
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await q.configureDedupe(arena, { bits, hashes: 3 });
    const key = shardKey('weir', arena, 'dedupe');
    // Block 0 cut after 20 bytes (its first bit set), block 1 gone.
    await fx.redis.set(key, Buffer.concat([Buffer.from([0x80]), Buffer.alloc(19)]));
    const dedupe = [
      [0, 300, 511],
      [512 + 7, 512 + 100, 512 + 400],
      [0, 300, 511],
    ];
    assert.equal(await q.enqueue(arena, 'a', ['x', 'y', 'x2'], { dedupe, dedupeBlocks: true }), 2, 'x and y new; x2 has only x\'s bits');
    assert.deepEqual(await setBits(arena), [0, 300, 511, 519, 612, 912]);
    assert.equal(await q.enqueue(arena, 'a', ['y again'], { dedupe: [dedupe[1] as number[]], dedupeBlocks: true }), 0);
  });

  it('is what the queue client sends when asked (dedupeBlocks) for positions in one block, and not for positions that straddle blocks, nor unasked', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await q.configureDedupe(arena, { bits: 512 * 8, hashes: 3 });
    await fx.redis.config('RESETSTAT');
    assert.equal(await q.enqueue(arena, 'a', ['x', 'y', 'x'], { dedupe: [[512, 513, 1023], [0, 1, 2], [512, 513, 1023]], dedupeBlocks: true }), 2);
    const inBlocks = await fx.redis.info('commandstats');
    assert.match(inBlocks, /cmdstat_getrange:calls=3,/);
    assert.doesNotMatch(inBlocks, /cmdstat_bitfield:/);
    await fx.redis.config('RESETSTAT');
    assert.equal(await q.enqueue(arena, 'a', ['z', 'x'], { dedupe: [[511, 512, 3], [512, 513, 1023]], dedupeBlocks: true }), 1);
    const straddling = await fx.redis.info('commandstats');
    assert.match(straddling, /cmdstat_bitfield:calls=1,/);
    assert.doesNotMatch(straddling, /cmdstat_getrange:/);
    await fx.redis.config('RESETSTAT');
    assert.equal(await q.enqueue(arena, 'a', ['w', 'x'], { dedupe: [[1024, 1025, 1026], [512, 513, 1023]] }), 1);
    const unasked = await fx.redis.info('commandstats');
    assert.match(unasked, /cmdstat_bitfield:calls=1,/);
    assert.doesNotMatch(unasked, /cmdstat_getrange:/);
    assert.deepEqual(await setBits(arena), [0, 1, 2, 3, 511, 512, 513, 1023, 1024, 1025, 1026]);
    assert.equal(await q.dedupeBitsSet(arena), 11);
  });

  it('maps a block into a shard of a sharded bitmap as it maps each position (p mod the shard’s bits)', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.fixShards(arena, 4);
    const names = ['a.test', 'b.test', 'c.test', 'd.test', 'e.test', 'f.test', 'g.test', 'h.test'];
    await q.setLimits(arena, Object.fromEntries(names.map((n) => [n, { rate: 'unlimited' as const }])));
    await q.configureDedupe(arena, { bits: 512 * 64, hashes: 5 });
    const layout = await q.layout(arena);
    const want = new Map<string, Set<number>>(layout.tags.map((t) => [t, new Set<number>()]));
    for (const n of names) {
      const urls = [`${n}/1`, `${n}/2`];
      const dedupe = urls.map((u) => blockPositions(u, 512 * 64, 5));
      assert.equal(await q.enqueue(arena, n, urls, { dedupe, dedupeBlocks: true }), 2);
      assert.equal(await q.enqueue(arena, n, urls, { dedupe, dedupeBlocks: true }), 0, `${n}: seen the second time`);
      const tag = layout.tags[shardOf(n, 4)] as string;
      for (const p of dedupe.flat()) want.get(tag)?.add(p % (512 * 16));
    }
    for (const tag of layout.tags) {
      assert.deepEqual(await setBits(arena, tag), [...(want.get(tag) ?? [])].sort((a, b) => a - b), `shard ${tag}`);
    }
  });

  it('refuses a malformed block-form entry, an offset past its block, or a block past the bitmap, before anything is written', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    await q.configureDedupe(arena, { bits: 512 * 4, hashes: 2 });
    await q.enqueue(arena, 'a', ['keep'], { dedupe: [[1, 2]] });
    const runner = new ScriptRunner(fx.redis);
    const keys = arenaKeys('weir', arena);
    const entry = (block: number, ...offsets: number[]): Buffer => {
      const b = Buffer.alloc(4 + 2 * offsets.length);
      b.writeUInt32BE(block, 0);
      offsets.forEach((o, i) => b.writeUInt16BE(o, 4 + 2 * i));
      return b;
    };
    // (Sorted: a hash table's order may change as Redis rehashes it.)
    const snapshot = async (): Promise<string> => JSON.stringify([await fx.redis.get(shardKey('weir', arena, 'dedupe')), Object.entries(await fx.redis.hgetall(shardKey('weir', arena, 'queues'))).sort()]);
    const before = await snapshot();
    const good = entry(1, 3, 4);
    for (const [what, bad] of [
      ['too short', entry(1, 3)],
      ['too long', entry(1, 3, 4, 5)],
      ['an offset past its block', entry(1, 3, 512)],
      ['a block past the bitmap', entry(4, 3, 4)],
      ['text', 'x'],
    ] as const) {
      // (The bad entry second: the first item's bits would be set were they not all checked first.)
      await assert.rejects(runner.run('enqueue', keys, [1, 'b2', 1, 'a', 2, 'u1', 'u2', good, bad]), { code: 'WEIR_BAD_ARGS' }, what);
    }
    await assert.rejects(runner.run('enqueue', keys, [1, 'b0', 1, 'a', 1, 'u1']), { code: 'WEIR_BAD_ARGS' }, 'block form of no positions');
    assert.equal(await snapshot(), before);
  });

  it('a span that ends inside a block (a shard told it by configureDedupe): positions up to its last bit taken, one past it refused', async () => {
    const q = fx.queue();
    const arena = freshArena();
    await q.setLimits(arena, { a: { rate: 'unlimited' } });
    const runner = new ScriptRunner(fx.redis);
    const keys = arenaKeys('weir', arena);
    // (Positions are given in a span of 2,148 bits, block 4 holding its last 100; this shard's part is 2,048: position p is its bit p mod 2,048.)
    await runner.run('configureDedupe', keys, [512 * 4, 2, 512 * 4 + 100]);
    const entry = (block: number, ...offsets: number[]): Buffer => {
      const b = Buffer.alloc(4 + 2 * offsets.length);
      b.writeUInt32BE(block, 0);
      offsets.forEach((o, i) => b.writeUInt16BE(o, 4 + 2 * i));
      return b;
    };
    for (const [what, bad] of [
      ['an offset past the span', entry(4, 3, 100)],
      ['a block past the span', entry(5, 3, 4)],
    ] as const) {
      await assert.rejects(runner.run('enqueue', keys, [1, 'b2', 1, 'a', 2, 'u1', 'u2', entry(1, 3, 4), bad]), { code: 'WEIR_BAD_ARGS' }, what);
    }
    assert.equal((await q.stats(arena)).queued, 0);
    assert.equal(String(await runner.run('enqueue', keys, [1, 'b2', 1, 'a', 2, 'u1', 'u2', entry(1, 3, 4), entry(4, 0, 99)])), '11');
    assert.equal(String(await runner.run('enqueue', keys, [1, 'b2', 1, 'a', 1, 'u3', entry(0, 0, 99)])), '0', 'block 4 is this shard\'s block 0: its bits were set');
  });
});
