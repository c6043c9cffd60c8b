/**
 * The crawl world most crawler tests need: a private redis-server, a fixture
 * web on 127.0.0.1, a temporary directory; started before the file's tests,
 * torn down after. Plus helpers to read what a crawl wrote and what the
 * servers saw.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import type { Redis } from 'ioredis';
import type { PageRecord } from '../../src/crawl/output/jsonl.js';
import { startRedis, type RedisServer } from './redis.js';
import { FixtureWeb, type RecordedRequest } from './web.js';

export interface CrawlWorld {
  server: RedisServer;
  redis: Redis;
  web: FixtureWeb;
  dir: string;
  /** A path in the world's directory. */
  file(name: string): string;
}

/**
 * Registers the world's set-up and tear-down for the calling test file.
 * `setup` runs once the world is up, in the same hook: Node 20 starts a
 * file's top-level `before` hooks together, so a second one could not rely
 * on the world being there.
 */
export function useCrawlWorld(label = 'world', setup?: (world: CrawlWorld) => Promise<void>): CrawlWorld {
  const world = {} as CrawlWorld;
  before(async () => {
    world.server = await startRedis();
    world.redis = world.server.client();
    world.web = new FixtureWeb();
    world.dir = await mkdtemp(join(tmpdir(), `weir-${label}-`));
    world.file = (name) => join(world.dir, name);
    await setup?.(world);
  });
  after(async () => {
    await world.web.close();
    await world.server.destroy();
    await rm(world.dir, { recursive: true, force: true });
  });
  return world;
}

/** The output lines a crawl wrote (--out / out). */
export async function readJsonl(path: string): Promise<PageRecord[]> {
  return (await readFile(path, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as PageRecord);
}

/** Requests as the server saw them, in arrival order: path and ms since the first. */
export function timeline(reqs: RecordedRequest[]): { path: string; t: number }[] {
  const sorted = [...reqs].sort((a, b) => a.at - b.at);
  const t0 = sorted[0]?.at ?? 0;
  return sorted.map((r) => ({ path: r.path, t: r.at - t0 }));
}

