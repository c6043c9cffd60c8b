import { after, before } from 'node:test';
import type { Redis } from 'ioredis';
import { FairQueue, type FairQueueOptions, type Lease } from '../../src/queue/index.js';
import { startRedis, type RedisServer } from './redis.js';

export interface QueueFixture {
  server: RedisServer;
  redis: Redis;
  queue(options?: FairQueueOptions): FairQueue;
}

/** One private redis-server for a test file, started before its tests and destroyed after. */
export function useRedis(): QueueFixture {
  const queues: FairQueue[] = [];
  const fx = {} as QueueFixture;
  before(async () => {
    fx.server = await startRedis();
    fx.redis = fx.server.client();
    fx.queue = (options?: FairQueueOptions) => {
      const q = new FairQueue(fx.redis, options);
      queues.push(q);
      return q;
    };
  });
  after(async () => {
    for (const q of queues) await q.close();
    await fx.server.destroy();
  });
  return fx;
}

let arenaSeq = 0;
/** A fresh arena name per test, so tests in one file share no state. */
export function freshArena(label = 't'): string {
  arenaSeq += 1;
  return `${label}-${process.pid}-${arenaSeq}`;
}

/** Serve time of a lease in integer µs (Redis clock). */
export const servedUs = (l: Lease): number => Math.round(l.servedAt * 1000);

/** Jain's fairness index of a list of shares: 1 is perfectly even. */
export function jain(xs: number[]): number {
  const sum = xs.reduce((a, b) => a + b, 0);
  const sq = xs.reduce((a, b) => a + b * b, 0);
  return (sum * sum) / (xs.length * sq);
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
