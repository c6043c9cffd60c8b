/**
 * What Redis has spent so far, for the benchmarks' before/after deltas:
 * main-thread CPU seconds (INFO cpu, user + sys) and calls by command
 * (INFO commandstats, commands run inside scripts counted too).
 */
import { Redis } from 'ioredis';

export interface RedisUsage {
  cpu: number;
  /** Of cpu: the kernel's part (sockets, epoll). */
  sys: number;
  calls: Map<string, number>;
  /** µs spent in each command, as Redis times them (a script's own commands counted in it and again by themselves). */
  usec: Map<string, number>;
}

export async function redisUsage(redis: Redis): Promise<RedisUsage> {
  const calls = new Map<string, number>();
  const usec = new Map<string, number>();
  for (const m of (await redis.info('commandstats')).matchAll(/cmdstat_([\w|]+):calls=(\d+),usec=(\d+)/g)) {
    calls.set(m[1] as string, Number(m[2]));
    usec.set(m[1] as string, Number(m[3]));
  }
  const cpu = await redis.info('cpu');
  const c = (k: string): number => Number(new RegExp(`${k}:([\\d.]+)`).exec(cpu)?.[1] ?? 0);
  return { cpu: c('used_cpu_user') + c('used_cpu_sys'), sys: c('used_cpu_sys'), calls, usec };
}

/** Calls made between two readings, by command, leaving out the readings' own INFO. */
export function callsBetween(before: RedisUsage, after: RedisUsage): Map<string, number> {
  const calls = new Map<string, number>();
  for (const [k, v] of after.calls) if (k !== 'info') calls.set(k, v - (before.calls.get(k) ?? 0));
  return calls;
}

/** µs spent in script calls (FCALL, EVALSHA, EVAL) between two readings. */
export function scriptUsecBetween(before: RedisUsage, after: RedisUsage): number {
  let us = 0;
  for (const k of ['fcall', 'evalsha', 'eval']) us += (after.usec.get(k) ?? 0) - (before.usec.get(k) ?? 0);
  return us;
}

export const totalCalls = (calls: Map<string, number>): number => [...calls.values()].reduce((a, b) => a + b, 0);

export const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

/** used_memory once Redis has finished freeing what earlier runs UNLINKed (lazy free). */
export async function usedMemory(redis: Redis): Promise<number> {
  for (;;) {
    const info = await redis.info('memory');
    if (Number(/lazyfree_pending_objects:(\d+)/.exec(info)?.[1] ?? 0) === 0) return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** `read` of each node (a cluster's masters), by port, each on a connection of its own. */
export async function onEachNode<T>(ports: number[], read: (r: Redis) => Promise<T>): Promise<T[]> {
  return Promise.all(
    ports.map(async (port) => {
      const r = new Redis({ port, host: '127.0.0.1' });
      try {
        return await read(r);
      } finally {
        r.disconnect();
      }
    }),
  );
}

/** usedMemory of each node, by port. */
export const usedMemoryOn = (ports: number[]): Promise<number[]> => onEachNode(ports, usedMemory);
