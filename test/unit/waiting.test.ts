/** Waiting's choice of shard (src/queue/waiting.ts): the weighted turn among shards that may have work. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Waiting } from '../../src/queue/waiting.js';

const counters = { dequeues: 0, emptyDequeues: 0, leases: 0, wakeups: 0, seenReads: 0, seenSkipped: 0 };
const waiting = (): Waiting =>
  new Waiting(
    () => {
      throw new Error('no blocking here');
    },
    (tag) => `wake:${tag}`,
    { ...counters },
  );

describe('Waiting: which shard next', () => {
  it('a shard not heard from yet is asked within a turn, however many ready queues the shards heard from report', () => {
    const w = waiting();
    const now = performance.now();
    // Shard a answered with 80,000 ready queues (an arena of 10^6 on 12 shards); b and c never asked yet.
    w.noteReply('a', now - 1, '', 80_000);
    const picks = Array.from({ length: 3 }, () => w.choose(['a', 'b', 'c']));
    assert.deepEqual([...new Set(picks)].sort(), ['a', 'b', 'c'], `three turns ask each shard once: ${picks.join(' ')}`);
  });

  it('heard from, shards are asked in proportion to their ready queues', () => {
    const w = waiting();
    const now = performance.now();
    w.noteReply('a', now - 1, '', 300);
    w.noteReply('b', now - 1, '', 100);
    const picks = Array.from({ length: 400 }, () => w.choose(['a', 'b']));
    assert.deepEqual([picks.filter((p) => p === 'a').length, picks.filter((p) => p === 'b').length], [300, 100]);
  });
});
