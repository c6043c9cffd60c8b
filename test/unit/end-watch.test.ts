/**
 * EndWatch (src/crawl/end-watch.ts): a worker told it holds no lease checks
 * at once whether the arena has drained, then a few times soon after, then
 * at its usual interval; without being told, only at that interval. The
 * interval here is an hour, so every check counted is one idleness asked for.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EndWatch } from '../../src/crawl/end-watch.js';
import type { WorkerSummary } from '../../src/crawl/worker-options.js';

function watched(isDrained: () => boolean): { watch: EndWatch; checks: () => number; halted: Promise<WorkerSummary['exitReason']>; stop: AbortController } {
  let checks = 0;
  let halt = (_r: WorkerSummary['exitReason']): void => undefined;
  const halted = new Promise<WorkerSummary['exitReason']>((r) => (halt = r));
  const stop = new AbortController();
  const watch = new EndWatch({
    budget: { limited: false, spent: () => Promise.resolve(false), used: () => Promise.resolve(0) },
    drained: () => {
      checks++;
      return Promise.resolve(isDrained());
    },
    halt: (reason) => {
      halt(reason);
      stop.abort();
    },
    signal: stop.signal,
    everyMs: 3_600_000,
  });
  return { watch, checks: () => checks, halted, stop };
}

const until = async (ok: () => boolean): Promise<void> => {
  while (!ok()) await new Promise((r) => setTimeout(r, 5));
};

describe('EndWatch', () => {
  it('checks at once when the worker goes idle, and halts when the arena has drained', async () => {
    let drained = false;
    const w = watched(() => drained);
    const running = w.watch.run();
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(w.checks(), 0, 'no check before the interval, untold');
    drained = true;
    w.watch.idle();
    assert.equal(await w.halted, 'drained');
    await running;
    assert.equal(w.checks(), 1);
  });

  it('not drained yet (another worker settling its last leases): five more checks soon after, then only the interval', async () => {
    const w = watched(() => false);
    const running = w.watch.run();
    w.watch.idle();
    await until(() => w.checks() === 6);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(w.checks(), 6, 'then none until the interval');
    w.watch.idle();
    await until(() => w.checks() === 12);
    w.stop.abort();
    await running;
  });
});
