import { hostname } from 'node:os';
import type { RedisClient } from '../../queue/index.js';
import type { CrawlKeys } from './keys.js';

/** A worker that stopped on a fault of its own (not a site's): shown by `weir status` and its page. */
export interface WorkerFault {
  /** host:pid of the worker. */
  worker: string;
  /** ms, the worker's clock. */
  at: number;
  /** A stable weir error code (WEIR_WARC: an archive could not be written). */
  code: string;
  message: string;
}

/** Faults kept per arena (newest first): a fleet that keeps failing still shows the latest. */
export const FAULTS_KEPT = 20;

/** Records why this worker stopped; best effort (Redis may be the thing that failed). */
export async function noteFault(redis: RedisClient, keys: Pick<CrawlKeys, 'faults'>, code: string, message: string): Promise<void> {
  const fault: WorkerFault = { worker: `${hostname()}:${process.pid}`, at: Date.now(), code, message: message.slice(0, 500) };
  await redis
    .multi()
    .lpush(keys.faults, JSON.stringify(fault))
    .ltrim(keys.faults, 0, FAULTS_KEPT - 1)
    .exec()
    .catch(() => undefined);
}

export async function readFaults(redis: RedisClient, keys: Pick<CrawlKeys, 'faults'>, count = 10): Promise<WorkerFault[]> {
  const faults: WorkerFault[] = [];
  for (const text of await redis.lrange(keys.faults, 0, count - 1)) {
    try {
      const f = JSON.parse(text) as Partial<WorkerFault>;
      if (typeof f.worker === 'string' && typeof f.at === 'number' && typeof f.code === 'string' && typeof f.message === 'string') faults.push({ worker: f.worker, at: f.at, code: f.code, message: f.message });
    } catch {
      // Not ours: ignored.
    }
  }
  return faults;
}
