import { Cluster } from 'ioredis';
import { FairQueue, type RedisClient } from '../queue/index.js';
import { bloomParams, legacyBloomParams, type BloomParams } from './dedupe/index.js';
import { crawlKeys, queuedUrl, type ArenaKeyMaker, type QueuedUrl } from './store/index.js';
import { STARTED_AT_FIELD } from './counters/index.js';
// (Leaf modules, not links/ and fetch/ whole: a kickoff loads no HTTP client
// and no HTML parser, 0.15 s of start-up; eslint.config.js allows these.)
import { ByDomain, enqueueUrls, type QueueRouter } from './links/enqueue.js';
import { candidateKeys, DomainList, type ListedLimits } from './links/domain-list.js';
import { HashedKeySet } from './links/hashed-keys.js';
import { Scope } from './links/scope.js';
import { guardedLookup, type LookupFunction } from './fetch/netguard.js';
import { AddressBook, ServerRouter } from './servers/index.js';
import { newDomainKey } from './urls/index.js';
import {
  checkLineFile,
  domainLineJudge,
  hasDomainList,
  LINE_FILE_LIMITS,
  lineFileValues,
  SeedError,
  startUrlJudge,
  storableSeed,
  validateSeed,
  type LineFileCheck,
  type LineJudge,
  type Seed,
} from './seed/index.js';

export interface KickoffResult {
  /** Queues the arena gained while this kickoff ran: the seed's domains' (in an arena new to kickoff, a listed domain's is made by its first URL: kickoff), start URLs' domains at defaultRate, server queues (perServer); workers running meanwhile may add theirs. */
  domainsCreated: number;
  /** Start URLs enqueued now; 0 when a previous kickoff already did. */
  enqueued: number;
  /** Sitemaps the seed lists, enqueued now. */
  sitemapsEnqueued: number;
  /** The seed's startFiles: URL lines in them, how many were new, bad lines skipped (the first few: "file:line: why"). */
  files: { urls: number; enqueued: number; bad: number; examples: string[] };
  /** The seed's domainFiles: domains listed from them, bad lines skipped; and start URLs' domains listed now at defaultRate. */
  domainFiles: { domains: number; bad: number; examples: string[]; defaulted: number };
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

/**
 * Domain-list answers kickoff keeps (per generation). None: start URLs are
 * placed a batch at a time, each batch's hosts asked of Redis together (each
 * once), and a list of 10^6 domains meets most hosts once; keeping every
 * answer cost more than asking again (a 10^6-domain kickoff: a fifth of its
 * CPU in the cache and the collector).
 */
const KICKOFF_CACHE = 0;

/** A start URL and its queue; `fresh`: a domain no list names, joining the crawl at the seed's defaultRate; `limits`: a listed domain's, its queue made with them by its first URL. */
interface Placed {
  url: string;
  domain: string;
  fresh: boolean;
  limits: ListedLimits | null;
}

/**
 * Where start URLs go: the domain the seed lists them under (rateLimits or
 * its domain list), else, with defaultRate, a domain of their own (keyed as
 * otherDomains keys new ones); else nowhere (a bad line).
 */
function placer(scope: Scope, seed: Seed): (urls: URL[]) => Promise<(Placed | { bad: string })[]> {
  const keying = seed.otherDomains?.key ?? 'registrable';
  return async (urls) => {
    const places = await scope.placesOf(urls);
    return urls.map((u, i) => {
      const place = places[i] ?? null;
      if (place !== null) return { url: u.href, domain: place.key, fresh: false, limits: place.limits };
      if (seed.defaultRate !== null) return { url: u.href, domain: newDomainKey(u, keying), fresh: true, limits: null };
      return { bad: `${u.href.slice(0, 200)} is not inside any domain of rateLimits${seed.domainFiles.length > 0 ? ' or domainFiles' : ''}` };
    });
  };
}

/** The seed's inline list (start or sitemaps: normalized when the seed was read) placed; a URL with no place is an error naming it. */
async function placeInline(field: string, urls: readonly string[], place: ReturnType<typeof placer>): Promise<Placed[]> {
  const placed = await place(urls.map((u) => new URL(u)));
  return placed.map((p, i) => {
    if ('bad' in p) throw new SeedError(`${field}[${i}]`, p.bad);
    return p;
  });
}

/**
 * What is written first: the shard count (another than the arena's is an
 * error before anything else is written), the bitmap (an existing one of
 * another size likewise), the seed, and when the crawl started (by Redis's
 * clock, for achieved rates in status).
 */
async function prepareArena(redis: RedisClient, seed: Seed, queue: FairQueue): Promise<BloomParams> {
  const keys = crawlKeys(seed.arena, queue);
  await queue.fixShards(seed.arena, seed.shards ?? undefined);
  const bloom = await dedupeFor(queue, seed);
  await queue.configureDedupe(seed.arena, bloom);
  await redis.set(keys.seed, JSON.stringify(storableSeed(seed)));
  const [sec, usec] = await redis.time();
  await redis.hsetnx(keys.stats, STARTED_AT_FIELD, String(Number(sec) * 1000 + Math.floor(Number(usec) / 1000)));
  return bloom;
}

/**
 * Domains the check pass knows were listed here, at most (2^21 in fact,
 * the table's slots being a power of two): 2^22 slots of 8 bytes, 32 MiB,
 * whatever the list's size (a 10^7-domain list would take
 * 2^25 slots, 256 MiB, against the kickoff's 200 MB bound). Past them a
 * domain is not held, and its start URLs are placed by asking Redis, as
 * those of domains earlier kickoffs listed are.
 */
const LISTED_HERE_MAX_KEYS = 2_000_000;

/**
 * The check pass's judge of start URL lines. With defaultRate every URL has
 * a place, its listed domain or one of its own, so the check needs only to
 * parse each line and asks Redis nothing (the domain list is looked up once
 * a URL, when it is queued); without one, a URL no list names is a bad line.
 * A URL under a domain this kickoff's own domain files listed has a place
 * too, known without Redis (`listedHere`, up to LISTED_HERE_MAX_KEYS of
 * them, cleared after the check pass: a 64-bit hash match, wrong about
 * 3 × 10^-7 of kickoffs at 10^6 domains, and then only in counting a bad
 * line as good): only the others are placed, asking Redis about the
 * domains earlier kickoffs listed. Which domain each
 * URL goes to (the longest key listed, maybe by an earlier kickoff) is asked
 * once, when it is queued.
 */
function startCheckJudge(seed: Seed, place: ReturnType<typeof placer>, listedHere: HashedKeySet): LineJudge<unknown> {
  if (seed.defaultRate !== null) return startUrlJudge((urls) => Promise.resolve(urls.map(() => true)));
  return startUrlJudge(async (urls) => {
    if (listedHere.size === 0) return place(urls);
    const covered = urls.map((u) => candidateKeys(u).some((k) => listedHere.has(k)));
    const placed = await place(urls.filter((_, i) => !covered[i]));
    let next = 0;
    return covered.map((c) => (c ? true : (placed[next++] as Placed | { bad: string })));
  });
}

/** Batches being written at once: one in Redis while the next is read and its calls made (each a LINE_FILE_LIMITS.batch of lines). */
const BATCHES_IN_FLIGHT = 2;

/**
 * Writes each batch `batches` yields, BATCHES_IN_FLIGHT at once: this
 * process and Redis at work at once, not by turns. Batches are written in
 * order; returns the sum of what the writes return.
 */
async function writeBatches<T>(batches: AsyncIterable<T[]>, write: (batch: T[]) => Promise<number>): Promise<number> {
  let sum = 0;
  const writing: Promise<number>[] = [];
  for await (const batch of batches) {
    const next = write(batch);
    // (A failure is thrown by an await below, not left unhandled meanwhile.)
    next.catch(() => undefined);
    writing.push(next);
    if (writing.length >= BATCHES_IN_FLIGHT) sum += await (writing.shift() as Promise<number>);
  }
  for (const w of writing) sum += await w;
  return sum;
}

/**
 * A domain file, a batch at a time: listed for the workers, and each
 * domain's queue made (or set) with its limits (both sent at once, batches
 * in file order: a domain's last line stands). With `byFirstUrl` (an arena
 * that has no queue yet), queues are left to be made by their first URLs,
 * with the limits the list gives (start URLs here, links by workers:
 * links/enqueue.ts): a domain's record is written once, not made empty and
 * written again, and a listed domain nothing links to costs no queue. Only
 * the domains the seed's rateLimits made just now are set (the file's line
 * stands over the seed's). (An arena with queues may have workers that
 * looked the list up before this kickoff changed it: there every listed
 * domain's queue is made or set now, so no worker's older answer can make
 * one with other limits.)
 */
async function listDomains(file: LineFileCheck, list: DomainList, queue: FairQueue, seed: Seed, listedHere: HashedKeySet | null, byFirstUrl: boolean): Promise<number> {
  return writeBatches(lineFileValues('domainFiles', file.file, domainLineJudge(seed.maxInFlightPerDomain)), async (rows) => {
    if (listedHere) for (const r of rows) listedHere.add(r.key);
    const made = byFirstUrl ? rows.filter((r) => Object.hasOwn(seed.rateLimits, r.key)) : rows;
    const limits = seed.perServer || made.length === 0 ? null : Object.fromEntries(made.map((r) => [r.key, { rate: r.rate, maxInFlight: r.maxInFlight }]));
    await Promise.all([list.put(rows), limits ? queue.setLimits(seed.arena, limits) : 0]);
    return rows.length;
  });
}

/**
 * Every domain file listed (listDomains), and what they held. A list this
 * kickoff writes all of is held here too, and places start URLs without
 * asking Redis (DomainList.keepCopyIfEmpty); else the check pass knows the
 * domains listed here by their hashes (`listedHere`). `defaulted`: start
 * URLs that may each list a domain of their own at defaultRate.
 */
async function listAll(checks: LineFileCheck[], list: DomainList | null, queue: FairQueue, seed: Seed, listedHere: HashedKeySet, byFirstUrl: boolean, defaulted: number): Promise<{ domains: number; bad: number; examples: string[] }> {
  const out = { domains: 0, bad: 0, examples: checks.flatMap((c) => c.examples).slice(0, LINE_FILE_LIMITS.examples) };
  if (!list) return out;
  // (Its table made at once for the domains it will hold: no doubling, old and new tables both held, on the way.)
  const copied = await list.keepCopyIfEmpty(checks.reduce((n, c) => n + c.lines - c.bad, defaulted));
  for (const c of checks) {
    // (With defaultRate the start check asks nothing of the list: none kept for it.)
    out.domains += await listDomains(c, list, queue, seed, copied || seed.defaultRate !== null ? null : listedHere, byFirstUrl);
    out.bad += c.bad;
  }
  return out;
}

/** What a kickoff's start URLs are written with. */
interface UrlWriting {
  redis: RedisClient;
  queue: FairQueue;
  seed: Seed;
  bloom: BloomParams;
  list: DomainList | null;
  router: QueueRouter | undefined;
  /** The limits of domains no list names (defaultRate), when the seed has them. */
  defaults: ListedLimits | undefined;
}

/**
 * Writes placed start URLs (emptying the array given), each a QueuedUrl
 * `make` gives; the new domains at defaultRate listed first, and counted
 * in `counts.defaulted`. Returns how many URLs were new. Start URLs were
 * checked to be inside a domain; include/exclude do not apply to them.
 * (Not async: a batch in flight holds its calls, not its URLs grouped too.)
 */
function urlWriter(w: UrlWriting, counts: { defaulted: number }): (placed: Placed[], make: (u: string) => QueuedUrl) => Promise<number> {
  const { redis, queue, seed, bloom, list, router, defaults } = w;
  return (placed, make) => {
    const batch = new ByDomain();
    const fresh = new Set<string>();
    for (const p of placed) {
      batch.add(p.domain, make(p.url), p.fresh, p.limits);
      if (p.fresh) fresh.add(p.domain);
    }
    // (Emptied once grouped: its holder keeps it while the batch is in flight.)
    placed.length = 0;
    // Listed before their URLs are queued, so a worker taking one finds its
    // domain: on one Redis the list's write goes first on the one connection,
    // and the batch's calls are made meanwhile (not after its answer, while
    // Redis would wait); on a Cluster the list may be another node's, so
    // its answer is waited for.
    const listing = fresh.size > 0 && list && defaults ? list.put([...fresh].map((key) => ({ key, ...defaults })), true) : Promise.resolve(0);
    // The next batch's check of a list held here, asked before this batch's calls: not answered only after them.
    list?.askLengthAhead();
    const o = { priorityDepth: seed.priorityDepth, router, otherLimits: defaults };
    const queueing = redis instanceof Cluster ? listing.then(() => enqueueUrls(queue, seed.arena, bloom, batch, o)) : enqueueUrls(queue, seed.arena, bloom, batch, o);
    // (Counted by a function outside this scope: a closure here would hold `batch` until the replies.)
    return countListed(listing, queueing, counts);
  };
}

/** `queueing`'s count, once `listing`'s is added to `counts.defaulted`. */
async function countListed(listing: Promise<number>, queueing: Promise<number>, counts: { defaulted: number }): Promise<number> {
  const [listed, enqueued] = await Promise.all([listing, queueing]);
  counts.defaulted += listed;
  return enqueued;
}

export interface KickoffOptions {
  /** Resolves start URLs' hosts for perServer (the crawler's guarded DNS unless given). */
  lookup?: LookupFunction | undefined;
  /** The most domains the check pass holds as listed here (LISTED_HERE_MAX_KEYS unless given: a test makes it small; the set holds 2,048 whatever is given, its table's least size). */
  listedHereMax?: number;
}

/**
 * Seeds an arena: stores the seed, sets each domain's limits (inline and
 * from domain files; in an arena with no queue yet, a listed domain's queue
 * is made by its first URL instead: listDomains), sizes the dedupe bitmap,
 * enqueues the start URLs (once). With perServer, the start URLs go to their servers' queues
 * (`lookup` resolves their hosts: the crawler's guarded DNS unless given),
 * made with their domains' limits. A file with too many bad lines is
 * refused before anything is queued (a domain file: before anything is written).
 */
export async function kickoff(redis: RedisClient, seed: Seed, queue = new FairQueue(redis), options: KickoffOptions = {}): Promise<KickoffResult> {
  const keys = crawlKeys(seed.arena, queue);
  const list = hasDomainList(seed) ? new DomainList(redis, keys.domainList, KICKOFF_CACHE) : null;
  const scope = new Scope(seed, list);
  const domainChecks: LineFileCheck[] = [];
  for (const file of seed.domainFiles) domainChecks.push(await checkLineFile('domainFiles', file, domainLineJudge(seed.maxInFlightPerDomain), 'domain,rate[,maxInFlight] lines'));
  // Without domain lists or with defaultRate, start files are read through before anything is written too.
  const place = placer(scope, seed);
  const listedHere = new HashedKeySet(options.listedHereMax ?? LISTED_HERE_MAX_KEYS);
  const checkJudge = startCheckJudge(seed, place, listedHere);
  const startChecks: LineFileCheck[] = [];
  const checkStarts = async (): Promise<void> => {
    for (const file of seed.startFiles) startChecks.push(await checkLineFile('startFiles', file, checkJudge, 'start URLs'));
    listedHere.clear();
  };
  // (With defaultRate every start URL has a place: its check needs no list.)
  const startsFirst = !list || seed.defaultRate !== null;
  if (startsFirst) await checkStarts();
  const bloom = await prepareArena(redis, seed, queue);
  const queuesBefore = (await queue.stats(seed.arena)).queues;
  if (!seed.perServer) await queue.setLimits(seed.arena, Object.fromEntries(Object.entries(seed.rateLimits).map(([domain, rate]) => [domain, { rate, maxInFlight: seed.maxInFlightPerDomain }])));
  const defaultedAtMost = seed.defaultRate === null ? 0 : startChecks.reduce((n, c) => n + c.lines - c.bad, seed.start.length + (Array.isArray(seed.sitemaps) ? seed.sitemaps.length : 0));
  const domainFiles = { ...(await listAll(domainChecks, list, queue, seed, listedHere, queuesBefore === 0, defaultedAtMost)), defaulted: 0 };
  // Start URLs are placed among the lists: checked now, before anything is queued.
  if (!startsFirst) await checkStarts();
  const start = await placeInline('start', seed.start, place);
  const sitemaps = await placeInline('sitemaps', Array.isArray(seed.sitemaps) ? seed.sitemaps : [], place);
  const router: QueueRouter | undefined = seed.perServer
    ? new ServerRouter(new AddressBook(redis, keys.addresses, options.lookup ?? guardedLookup(seed.allowPrivateNetworks)), scope)
    : undefined;
  const defaults: ListedLimits | undefined = seed.defaultRate === null ? undefined : { rate: seed.defaultRate, maxInFlight: seed.maxInFlightPerDomain };
  const enqueue = urlWriter({ redis, queue, seed, bloom, list, router, defaults }, domainFiles);
  const enqueued = await enqueue(start, (u) => queuedUrl(u));
  // Sitemaps the seed lists (those robots.txt lists are queued by the worker that reads it).
  const sitemapsEnqueued = await enqueue(sitemaps, (u) => queuedUrl(u, { sitemapLevel: 0 }));
  // Then queued as they stream, a batch at a time (a second kickoff finds them seen: the Bloom filter).
  const files = { urls: 0, enqueued: 0, bad: 0, examples: startChecks.flatMap((c) => c.examples).slice(0, LINE_FILE_LIMITS.examples) };
  for (const c of startChecks) {
    files.urls += c.lines - c.bad;
    files.bad += c.bad;
    files.enqueued += await writeBatches(lineFileValues('startFiles', c.file, startUrlJudge(place)), (batch) => enqueue(batch, (u) => queuedUrl(u)));
  }
  const domainsCreated = (await queue.stats(seed.arena)).queues - queuesBefore;
  return { domainsCreated, enqueued, sitemapsEnqueued, bloom, files, domainFiles };
}
