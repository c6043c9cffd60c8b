import { FairQueue, type RedisClient } from '../queue/index.js';
import { bloomParams, legacyBloomParams, type BloomParams } from './dedupe/index.js';
import { crawlKeys, queuedUrl, type ArenaKeyMaker, type QueuedUrl } from './store/index.js';
import { STARTED_AT_FIELD } from './counters/index.js';
import { ByDomain, enqueueUrls, Scope, type QueueRouter } from './links/index.js';
import { guardedLookup, type LookupFunction } from './fetch/index.js';
import { AddressBook, ServerRouter } from './servers/index.js';
import { checkStartFile, START_FILE_LIMITS, startFileUrls, storableSeed, validateSeed, type Seed } from './seed/index.js';

export interface KickoffResult {
  /** Queues (domains) created now (with perServer, server queues are made by their first URLs instead: 0). */
  domainsCreated: number;
  /** Start URLs enqueued now; 0 when a previous kickoff already did. */
  enqueued: number;
  /** Sitemaps the seed lists, enqueued now. */
  sitemapsEnqueued: number;
  /** The seed's startFiles: URL lines in them, how many were new, bad lines skipped (the first few: "file:line: why"). */
  files: { urls: number; enqueued: number; bad: number; examples: string[] };
  bloom: { bits: number; hashes: number };
}

/** The seed kickoff stored in the arena (what every worker uses), or null before kickoff. */
export async function readStoredSeed(redis: RedisClient, arena: string, queue: ArenaKeyMaker): Promise<Seed | null> {
  const raw = await redis.get(crawlKeys(arena, queue).seed);
  return raw ? validateSeed(JSON.parse(raw)) : null;
}

/**
 * The bitmap for this seed's Bloom settings: the arena's own when it was
 * kicked off with the same settings by a weir that sized bitmaps the older
 * way (legacyBloomParams), so it keeps crawling with the bits it has set;
 * else today's sizing (which configureDedupe refuses if the arena has
 * another bitmap: the settings changed).
 */
async function dedupeFor(queue: FairQueue, seed: Seed): Promise<BloomParams> {
  const { expectedUrls, falsePositiveRate } = seed.bloom;
  const now = bloomParams(expectedUrls, falsePositiveRate);
  const stored = await queue.dedupeConfig(seed.arena);
  if (!stored) return now;
  const legacy = legacyBloomParams(expectedUrls, falsePositiveRate);
  return stored.bits === legacy.bits && stored.hashes === legacy.hashes ? stored : now;
}

/** URLs of the seed (each inside one of its domains), grouped by domain. */
function seedUrlsByDomain(scope: Scope, urls: readonly string[], make: (u: string) => QueuedUrl): ByDomain {
  const batch = new ByDomain();
  for (const u of urls) {
    const domain = scope.domainOf(u);
    if (domain) batch.add(domain, make(u));
  }
  return batch;
}

/**
 * Seeds an arena: stores the seed, sets each domain's limits, sizes the
 * dedupe bitmap, enqueues the start URLs (once). With perServer, the start
 * URLs go to their servers' queues (`lookup` resolves their hosts: the
 * crawler's guarded DNS unless given), made with their domains' limits.
 */
export async function kickoff(redis: RedisClient, seed: Seed, queue = new FairQueue(redis), options: { lookup?: LookupFunction | undefined } = {}): Promise<KickoffResult> {
  const keys = crawlKeys(seed.arena, queue);
  // Start files are read through first: one with too many bad lines is refused before anything is written.
  const scope = new Scope(seed);
  const inScope = (u: string): boolean => scope.domainOf(u) !== null;
  const checks = [];
  for (const file of seed.startFiles) checks.push(await checkStartFile(file, inScope));
  // The shard count first: another than the arena's is an error before anything is written.
  await queue.fixShards(seed.arena, seed.shards ?? undefined);
  // Limits and the bitmap first: an existing bitmap of another size is an error before anything else is written.
  const bloom = await dedupeFor(queue, seed);
  await queue.configureDedupe(seed.arena, bloom);
  await redis.set(keys.seed, JSON.stringify(storableSeed(seed)));
  // When the crawl started, by Redis's clock (for achieved rates in status).
  const [sec, usec] = await redis.time();
  await redis.hsetnx(keys.stats, STARTED_AT_FIELD, String(Number(sec) * 1000 + Math.floor(Number(usec) / 1000)));
  const limits = Object.fromEntries(
    Object.entries(seed.rateLimits).map(([domain, rate]) => [domain, { rate, maxInFlight: seed.maxInFlightPerDomain }]),
  );
  const domainsCreated = seed.perServer ? 0 : await queue.setLimits(seed.arena, limits);
  const router: QueueRouter | undefined = seed.perServer
    ? new ServerRouter(new AddressBook(redis, keys.addresses, options.lookup ?? guardedLookup(seed.allowPrivateNetworks)), scope)
    : undefined;
  // Start URLs were checked to be inside a domain; include/exclude do not apply to them.
  const bands = { priorityDepth: seed.priorityDepth, router };
  const enqueued = await enqueueUrls(queue, seed.arena, bloom, seedUrlsByDomain(scope, seed.start, (u) => queuedUrl(u)), bands);
  // Sitemaps the seed lists (those robots.txt lists are queued by the worker that reads it).
  const sitemaps = Array.isArray(seed.sitemaps) ? seed.sitemaps : [];
  const sitemapsEnqueued = await enqueueUrls(queue, seed.arena, bloom, seedUrlsByDomain(scope, sitemaps, (u) => queuedUrl(u, { sitemapLevel: 0 })), bands);
  // Then queued as they stream, a batch at a time (a second kickoff finds them seen: the Bloom filter).
  const files = { urls: 0, enqueued: 0, bad: 0, examples: checks.flatMap((c) => c.examples).slice(0, START_FILE_LIMITS.examples) };
  for (const c of checks) {
    files.urls += c.lines - c.bad;
    files.bad += c.bad;
    for await (const batch of startFileUrls(c.file, inScope)) files.enqueued += await enqueueUrls(queue, seed.arena, bloom, seedUrlsByDomain(scope, batch, (u) => queuedUrl(u)), bands);
  }
  return { domainsCreated, enqueued, sitemapsEnqueued, bloom, files };
}
