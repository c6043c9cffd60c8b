/**
 * Domains listed in files (seed domainFiles, defaultRate): the list read as
 * it streams into Redis, bad lines named by file and line, too many refused
 * before anything is written; workers placing links through the list in
 * Redis exactly as through inline rateLimits; and a crawl over 1,040 host
 * names judged from the servers' own arrival logs: listed domains crawled at
 * their listed rates, start URLs' unlisted domains at the default rate,
 * links to any other domain not followed.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import type { Command } from 'ioredis';
import { kickoff, type KickoffOptions, type KickoffResult } from '../../src/crawl/kickoff.js';
import { ByDomain, DomainList, enqueueUrls, Scope } from '../../src/crawl/links/index.js';
import { crawlKeys, queuedUrl } from '../../src/crawl/store/index.js';
import { LINE_FILE_LIMITS, storableSeed, validateSeed } from '../../src/crawl/seed/index.js';
import { DomainMatcher, parseDomainKey, type DomainKey } from '../../src/crawl/urls/index.js';
import { FairQueue } from '../../src/queue/index.js';
import { HostWeb } from '../helpers/host-web.js';
import { closestPair, requestTimes } from '../helpers/web.js';
import { HOSTS, name, outLinks, page, SEEDS } from '../helpers/outward-web.js';
import { useCrawlWorld } from '../helpers/world.js';

const world = useCrawlWorld('domainfiles');

/** A small deterministic generator (the property checks repeat exactly). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/**
 * Kicks `seed` off through a client that counts the HMGETs of the arena's
 * domain list; `before` sees each command as it goes and may do something
 * first (awaited).
 */
/** What the last kickoffCounted's kickoff returned in full. */
let lastKickoff: KickoffResult | null = null;

async function kickoffCounted(
  seed: ReturnType<typeof validateSeed>,
  before: (cmd: Command) => Promise<unknown> | undefined = () => undefined,
  options: KickoffOptions = {},
): Promise<{ reads: number; bad: number; enqueued: number }> {
  const client = world.redis.duplicate();
  let reads = 0;
  const send = client.sendCommand.bind(client);
  client.sendCommand = ((cmd: Parameters<typeof send>[0]) => {
    if (cmd.name.toLowerCase() === 'hmget' && String(cmd.args[0]).endsWith(':domainlist')) reads += 1;
    const first = before(cmd);
    return first ? first.then(() => send(cmd)) : send(cmd);
  });
  try {
    const r = await kickoff(client, seed, undefined, options);
    lastKickoff = r;
    return { reads, bad: r.files.bad, enqueued: r.files.enqueued };
  } finally {
    client.disconnect();
  }
}

/** A command's arguments as sent (ioredis's own, or an encoded script call's after its head), as text. */
function respArgs(cmd: Command): string[] {
  const wire = cmd.toWritable(null as never);
  if (typeof wire === 'string' || !Buffer.isBuffer(wire)) return cmd.args.map(String);
  const out: string[] = [];
  let at = wire.indexOf('\r\n') + 2;
  while (at < wire.length) {
    const end = wire.indexOf('\r\n', at);
    const size = Number(wire.toString('latin1', at + 1, end));
    out.push(wire.toString('latin1', end + 2, end + 2 + size));
    at = end + 2 + size + 2;
  }
  // (Without the command's name.)
  return out.slice(1);
}

describe('domain files', () => {
  it('a list in Redis places URLs as the same keys inline would: parents, ports, IP addresses, longest key first (2,000 random URLs)', async () => {
    const r = rng(7);
    const labels = ['a', 'b', 'shop', 'www', 'x1', 'example', 'co'];
    const host = (depth: number): string => Array.from({ length: depth }, () => labels[Math.floor(r() * labels.length)]).join('.');
    const raw = new Set<string>(['127.0.0.1', '127.0.0.2:8080', '[::1]:9000', 'example.co', 'shop.example.co:8443']);
    while (raw.size < 60) raw.add(`${host(1 + Math.floor(r() * 3))}${r() < 0.3 ? `:${[80, 443, 8080][Math.floor(r() * 3)]}` : ''}`);
    const keys = [...raw].map((k) => parseDomainKey(k) as DomainKey);
    const list = new DomainList(world.redis, 'weir:{domainfiles-prop}:domainlist');
    await list.put(keys.map((k) => ({ key: k.key, rate: 5, maxInFlight: 1 })));
    const inline = new DomainMatcher(keys);
    const listed = new Scope({ rateLimits: {}, include: [], exclude: [] }, list);
    const urls: URL[] = [];
    for (let i = 0; i < 2000; i++) {
      const pick = r();
      const h = pick < 0.05 ? '127.0.0.1' : pick < 0.1 ? '127.0.0.2' : pick < 0.12 ? '[::1]' : host(1 + Math.floor(r() * 5));
      const port = r() < 0.5 ? '' : `:${[80, 443, 8080, 8443, 9000][Math.floor(r() * 5)]}`;
      urls.push(new URL(`${r() < 0.5 ? 'http' : 'https'}://${h}${port}/p`));
    }
    // Decided together, as a page's links are: their lookups go to Redis as one call.
    const got = await Promise.all(urls.map(async (u) => (await listed.placeOf(u))?.key ?? null));
    let matched = 0;
    urls.forEach((u, i) => {
      const want = inline.match(u)?.key ?? null;
      const have = got[i] ?? null;
      // (Two keys of one length can both take a URL, a tie either may win; never a shorter key.)
      assert.equal(have?.length ?? null, want?.length ?? null, `${u.href}: inline ${want}, listed ${have}`);
      if (have !== null) {
        matched++;
        assert.ok(keys.find((k) => k.key === have), `${have} is a listed key`);
      }
    });
    assert.ok(matched > 300, `the check met listed keys often (${matched} of 2000)`);
    // A kickoff batch's way (no cache, all at once) places every URL where a page's links are placed.
    const batch = new Scope({ rateLimits: {}, include: [], exclude: [] }, new DomainList(world.redis, 'weir:{domainfiles-prop}:domainlist', 0));
    assert.deepEqual((await batch.placesOf(urls)).map((p) => p?.key ?? null), got);
    // And a kickoff that wrote the whole list and holds it, without asking Redis: the same.
    const heldList = new DomainList(world.redis, 'weir:{domainfiles-prop-held}:domainlist', 0);
    assert.equal(await heldList.keepCopyIfEmpty(keys.length), true);
    await heldList.put(keys.map((k) => ({ key: k.key, rate: 5, maxInFlight: 1 })));
    const held = new Scope({ rateLimits: {}, include: [], exclude: [] }, heldList);
    assert.deepEqual((await held.placesOf(urls)).map((p) => p?.key ?? null), got);
    // A held list of keys none of which names a port (its lookups then skip the URLs' ports), then one that does: each as the same keys inline.
    const portless = keys.filter((k) => k.port === null);
    const portlessList = new DomainList(world.redis, 'weir:{domainfiles-prop-portless}:domainlist', 0);
    assert.equal(await portlessList.keepCopyIfEmpty(keys.length), true);
    await portlessList.put(portless.map((k) => ({ key: k.key, rate: 5, maxInFlight: 1 })));
    // (Lengths: two keys of one length can both take a URL, as above.)
    const placedBy = async (l: DomainList): Promise<(number | null)[]> => (await new Scope({ rateLimits: {}, include: [], exclude: [] }, l).placesOf(urls)).map((p) => p?.key.length ?? null);
    const inlinePortless = new DomainMatcher(portless);
    assert.deepEqual(await placedBy(portlessList), urls.map((u) => inlinePortless.match(u)?.key.length ?? null));
    await portlessList.put(keys.filter((k) => k.port !== null).map((k) => ({ key: k.key, rate: 5, maxInFlight: 1 })));
    assert.deepEqual(await placedBy(portlessList), got.map((k) => k?.length ?? null));
  });

  it('put with onlyNew lists only domains not listed yet, as HSETNX would: a listed one keeps its limits, a domain given twice in a batch its first, across calls of 2,000', async () => {
    const key = 'weir:{domainfiles-putnew}:domainlist';
    const list = new DomainList(world.redis, key, 0);
    await list.put([{ key: 'old.example', rate: 9, maxInFlight: 3 }]);
    const rows = Array.from({ length: 4500 }, (_, i) => ({ key: `d${i}.example`, rate: 1, maxInFlight: 1 }));
    // The listed one among them, and one given twice (its second with other limits), the two in different calls of 2,000.
    rows.splice(10, 0, { key: 'old.example', rate: 1, maxInFlight: 1 });
    rows.push({ key: 'd5.example', rate: 7, maxInFlight: 2 });
    rows.splice(3000, 0, { key: 'd3500.example', rate: 2, maxInFlight: 2 });
    assert.equal(await list.put(rows, true), 4500);
    assert.equal(await world.redis.hlen(key), 4501);
    assert.deepEqual(await world.redis.hmget(key, 'old.example', 'd5.example', 'd3500.example', 'd4499.example'), ['9 3', '1 1', '2 2', '1 1']);
    // Again: nothing new.
    assert.equal(await list.put(rows.slice(0, 50), true), 0);
  });

  it('kickoff: a gzipped list with a header and bad lines named by line, queues made with each limit; start URLs of unlisted domains at the default rate, or bad without one; again: nothing new', async () => {
    const rows = ['domain,rate,maxInFlight', '# a comment'];
    for (let i = 0; i < 5000; i++) rows.push(`d${i}.test,${i % 2 === 0 ? 2 : 'unlimited'}${i % 3 === 0 ? ',4' : ''}`);
    rows.splice(100, 0, 'bad domain.test,1');
    rows.splice(200, 0, 'd1.test,fast');
    rows.splice(300, 0, 'd2.test');
    const domains = join(world.dir, 'domains.csv.gz');
    await writeFile(domains, gzipSync(rows.join('\n')));
    const starts = join(world.dir, 'starts.txt');
    await writeFile(starts, [...Array.from({ length: 5000 }, (_, i) => `http://www.d${i}.test/`), 'http://elsewhere.test/x', 'http://sub.elsewhere.test/y'].join('\n'));
    const seed = validateSeed({ arena: 'domainfiles-kick', domainFiles: [domains], startFiles: [starts], defaultRate: 0.5, maxInFlightPerDomain: 2 });
    const r = await kickoff(world.redis, seed);
    assert.deepEqual([r.domainFiles.domains, r.domainFiles.bad, r.domainFiles.defaulted], [5000, 3, 1]);
    assert.deepEqual(r.domainFiles.examples.map((e) => e.replace(`${domains}:`, '').split(':')[0]), ['101', '201', '301']);
    assert.match(r.domainFiles.examples[1] ?? '', /rate must be requests per second/);
    assert.deepEqual([r.files.urls, r.files.enqueued, r.domainsCreated], [5002, 5002, 5001], 'a queue for each listed domain (each has a start URL) and one at the default rate');
    const queues = new Map((await new FairQueue(world.redis).allQueueStats('domainfiles-kick')).map((q) => [q.name, q]));
    assert.equal(queues.size, 5001);
    assert.deepEqual([queues.get('d0.test')?.rate, queues.get('d0.test')?.maxInFlight], [2, 4]);
    assert.deepEqual([queues.get('d1.test')?.rate, queues.get('d1.test')?.maxInFlight], ['unlimited', 2]);
    // elsewhere.test and sub.elsewhere.test: one registrable domain, at the default rate.
    assert.deepEqual([queues.get('elsewhere.test')?.rate, queues.get('elsewhere.test')?.queued], [0.5, 2]);
    const again = await kickoff(world.redis, seed);
    assert.deepEqual([again.files.enqueued, again.enqueued], [0, 0], 'nothing new the second time');
    // Without a default rate, a start URL no list names is a bad line (too many of them: refused).
    const strict = validateSeed({ arena: 'domainfiles-strict', domainFiles: [domains], startFiles: [starts] });
    const s = await kickoff(world.redis, strict);
    assert.deepEqual([s.files.bad, s.files.enqueued], [2, 5000]);
    assert.match(s.files.examples[0] ?? '', /:5001: http:\/\/elsewhere\.test\/x is not inside any domain of rateLimits or domainFiles/);
  });

  it("kickoff asks the domain list about start URLs only when it did not write all of it: a first kickoff holds the list it writes (no read, with defaultRate or without); a later one asks once a URL, when queued, and its check pass only about URLs outside its own domain files", async () => {
    const domains = join(world.dir, 'once.csv');
    await writeFile(domains, Array.from({ length: 100 }, (_, i) => `d${i}.test,1`).join('\n'));
    const starts = join(world.dir, 'once.txt');
    await writeFile(starts, [...Array.from({ length: 100 }, (_, i) => `http://www.d${i}.test/`), 'not a url'].join('\n'));
    const withDefault = await kickoffCounted(validateSeed({ arena: 'domainfiles-once', domainFiles: [domains], startFiles: [starts], defaultRate: 1 }));
    assert.deepEqual(withDefault, { reads: 0, bad: 1, enqueued: 100 });
    const without = await kickoffCounted(validateSeed({ arena: 'domainfiles-twice', domainFiles: [domains], startFiles: [starts] }));
    assert.deepEqual(without, { reads: 0, bad: 1, enqueued: 100 });
    // Domains an earlier kickoff listed are in Redis only: the check pass asks about those URLs (and the one no list names), and places them.
    // (110 URLs, a few candidate keys each: one HMGET a pass.)
    const later = join(world.dir, 'later.csv');
    await writeFile(later, Array.from({ length: 10 }, (_, i) => `e${i}.test,1`).join('\n'));
    const mixed = join(world.dir, 'mixed.txt');
    await writeFile(mixed, [...Array.from({ length: 10 }, (_, i) => `http://e${i}.test/a`), ...Array.from({ length: 100 }, (_, i) => `http://d${i}.test/a`), 'http://nowhere.test/'].join('\n'));
    const second = await kickoffCounted(validateSeed({ arena: 'domainfiles-twice', domainFiles: [later], startFiles: [mixed] }));
    assert.deepEqual(second, { reads: 2, bad: 1, enqueued: 110 });
    const queues = await new FairQueue(world.redis).stats('domainfiles-twice');
    assert.equal(queues.queued, 210, "every start URL of both kickoffs queued, under the earlier kickoff's domains too");
  });

  it('the list a first kickoff holds places start URLs as Redis would (parents, ports, IP addresses, the longest key, the last line of a domain); another writer meanwhile and it asks Redis instead', async () => {
    const domains = join(world.dir, 'held.csv');
    await writeFile(domains, ['example.test,1', 'a.example.test,2', 'a.example.test:8080,3', 'b.example.test:443,4', '127.0.0.2,5', 'c.example.test,6', 'c.example.test,7,3'].join('\n'));
    const starts = join(world.dir, 'held.txt');
    const urls = ['http://x.y.example.test/', 'http://a.example.test/', 'http://a.example.test:8080/', 'http://www.a.example.test:8080/', 'http://www.a.example.test/', 'https://b.example.test/', 'http://b.example.test/', 'http://127.0.0.2:9/', 'http://c.example.test/', 'http://other.test/'];
    await writeFile(starts, urls.join('\n'));
    const seed = (arena: string): ReturnType<typeof validateSeed> => validateSeed({ arena, domainFiles: [domains], startFiles: [starts] });
    const rows = async (arena: string): Promise<(string | number)[][]> =>
      (await new FairQueue(world.redis).allQueueStats(arena)).filter((q) => q.queued > 0).map((q) => [q.name, q.rate, q.maxInFlight, q.queued]).sort();
    const expected = [
      ['127.0.0.2', 5, 2, 1],
      ['a.example.test', 2, 2, 2],
      ['a.example.test:8080', 3, 2, 2],
      ['b.example.test:443', 4, 2, 1],
      ['c.example.test', 7, 3, 1],
      ['example.test', 1, 2, 2],
    ];
    // Held: nothing read. Not held (the list had a domain already): the same queues, asked of Redis.
    assert.deepEqual(await kickoffCounted(seed('domainfiles-held')), { reads: 0, bad: 1, enqueued: 9 });
    assert.deepEqual(await rows('domainfiles-held'), expected);
    await world.redis.hset(crawlKeys('domainfiles-asked', new FairQueue(world.redis)).domainList, 'unrelated.test', '1 1');
    assert.deepEqual(await kickoffCounted(seed('domainfiles-asked')), { reads: 2, bad: 1, enqueued: 9 });
    assert.deepEqual(await rows('domainfiles-asked'), expected);
    // Another kickoff lists www.a.example.test while this one places its start URLs: the list's length is not the one held, so Redis is asked.
    const listKey = crawlKeys('domainfiles-raced', new FairQueue(world.redis)).domainList;
    let lengths = 0;
    const raced = await kickoffCounted(seed('domainfiles-raced'), (cmd) => (cmd.name.toLowerCase() === 'hlen' && ++lengths === 2 ? world.redis.hset(listKey, 'www.a.example.test', '9 1') : undefined));
    assert.deepEqual(raced, { reads: 2, bad: 1, enqueued: 9 });
    assert.deepEqual((await rows('domainfiles-raced')).filter((r) => String(r[0]).startsWith('www.') || r[0] === 'a.example.test'), [['a.example.test', 2, 2, 1], ['www.a.example.test', 9, 1, 1]]);
  });

  it("at defaultRate, each batch's new domains are listed before any call carries their URLs, though the calls do not wait for the listing's answer; counted across batches in flight", async () => {
    // Four and a half batches of start URLs (LINE_FILE_LIMITS.batch lines a batch), each URL a domain of its own, no list beforehand.
    const n = 4.5 * LINE_FILE_LIMITS.batch;
    const starts = join(world.dir, 'ordered.txt');
    await writeFile(starts, Array.from({ length: n }, (_, i) => `http://o${i}.test/`).join('\n'));
    const listed = new Set<string>();
    let calls = 0;
    let unlisted = 0;
    const r = await kickoffCounted(validateSeed({ arena: 'domainfiles-ordered', startFiles: [starts], defaultRate: 2 }), (cmd) => {
      // One connection: the order sent is the order Redis runs them in.
      const args = respArgs(cmd);
      const name = cmd.name.toLowerCase();
      if (name === 'eval' && String(args[2]).endsWith(':domainlist')) for (let i = 3; i < args.length; i += 2) listed.add(args[i] as string);
      if (name === 'fcall' && String(args[0]).endsWith('_enqueue')) {
        const keys = Number(args[1]);
        // After the keys: shards, k, g, then g (queue, n) pairs.
        const g = Number(args[2 + keys + 2]);
        for (let i = 0; i < g; i++) if (!listed.has(args[2 + keys + 3 + 2 * i] as string)) unlisted++;
        calls++;
      }
      return undefined;
    });
    assert.equal(r.enqueued, n);
    assert.equal(r.reads, 0, "the list held here throughout: each batch's length, asked ahead, counted the batch before's listing");
    assert.equal(lastKickoff?.domainFiles.defaulted, n, "every batch's listing counted");
    assert.ok(calls >= n / 1000, `enqueue calls seen (${calls})`);
    assert.equal(listed.size, n);
    assert.equal(unlisted, 0, 'no queue in a call before its domain was listed');
    assert.equal(await world.redis.hlen(crawlKeys('domainfiles-ordered', new FairQueue(world.redis)).domainList), n);
  });

  it("past the most domains its check pass holds as listed here, a kickoff's own domains' start URLs are placed by asking Redis: every one queued with its listed limits, none called bad", async () => {
    const domains = join(world.dir, 'bound.csv');
    // (More than the fewest a set holds, 2,048: its table's least size.)
    const n = 3000;
    await writeFile(domains, Array.from({ length: n }, (_, i) => `f${i}.test,${1 + (i % 3)}`).join('\n'));
    const starts = join(world.dir, 'bound.txt');
    await writeFile(starts, [...Array.from({ length: n }, (_, i) => `http://f${i}.test/a`), 'http://nowhere.test/'].join('\n'));
    // A kickoff into an arena whose list holds a domain already (so the list is not held here: the check pass's set is what knows this kickoff's domains), counting the bytes of the list's fields its check pass asked.
    const run = async (arena: string, listedHereMax?: number): Promise<{ fields: number; bad: number; enqueued: number }> => {
      await world.redis.hset(crawlKeys(arena, new FairQueue(world.redis)).domainList, 'unrelated.test', '1 1');
      let fields = 0;
      let queuing = false;
      const r = await kickoffCounted(
        validateSeed({ arena, domainFiles: [domains], startFiles: [starts] }),
        (cmd) => {
          // (Before the first enqueue: the check pass's. Its fields are encoded with the command, not left in its args: sendEncoded.)
          if (cmd.name.toLowerCase() === 'fcall' && String(cmd.args[0]).endsWith('_enqueue')) queuing = true;
          if (!queuing && cmd.name.toLowerCase() === 'hmget' && String(cmd.args[0]).endsWith(':domainlist')) fields += Buffer.byteLength(cmd.toWritable({}));
          return undefined;
        },
        { listedHereMax },
      );
      return { fields, bad: r.bad, enqueued: r.enqueued };
    };
    const held = await run('domainfiles-bound-all');
    const bounded = await run('domainfiles-bound-20', 20);
    assert.deepEqual([held.bad, held.enqueued, bounded.bad, bounded.enqueued], [1, n, 1, n]);
    // (Held, the check pass asks about nowhere.test alone; bounded, about the 952 or more URLs whose domains it could not hold too, some 20 bytes each. The first batches' asks when queued come before anything is queued as well, in both.)
    assert.ok(bounded.fields - held.fields > 952 * 20, `the check pass asked Redis ${bounded.fields} bytes of fields bounded, ${held.fields} with all held`);
    const limits = async (arena: string): Promise<(string | number)[][]> =>
      (await new FairQueue(world.redis).allQueueStats(arena)).filter((q) => q.queued > 0).map((q) => [q.name, q.rate, q.queued]).sort();
    const expected = Array.from({ length: n }, (_, i) => [`f${i}.test`, 1 + (i % 3), 1]).sort();
    assert.deepEqual(await limits('domainfiles-bound-20'), expected);
    assert.deepEqual(await limits('domainfiles-bound-all'), expected);
  });

  it("in an arena with no queue yet a listed domain's queue is made by its first URL, start URL or link, with its listed limits; a later kickoff makes or sets every listed domain's", async () => {
    const arena = 'domainfiles-first';
    const domains = join(world.dir, 'first.csv');
    // a.test and b.test with start URLs, c.test without; both.test also in the seed's rateLimits (the file's line stands).
    await writeFile(domains, ['a.test,2,1', 'b.test,unlimited,3', 'c.test,4,2', 'both.test,7,1'].join('\n'));
    const starts = join(world.dir, 'first.txt');
    await writeFile(starts, ['http://a.test/', 'http://www.b.test/'].join('\n'));
    const seed = validateSeed({ arena, domainFiles: [domains], startFiles: [starts], rateLimits: { 'both.test': 1 } });
    const queue = new FairQueue(world.redis);
    const rows = async (): Promise<(string | number)[][]> => (await queue.allQueueStats(arena)).map((q) => [q.name, q.rate, q.maxInFlight, q.queued]).sort();
    const first = await kickoff(world.redis, seed);
    assert.equal(first.domainsCreated, 3);
    assert.deepEqual(await rows(), [['a.test', 2, 1, 1], ['b.test', 'unlimited', 3, 1], ['both.test', 7, 1, 0]], 'no queue for c.test: nothing has led to it');
    // A worker's link into c.test, placed and queued the worker's way: its queue made with its listed limits.
    const scope = new Scope(seed, new DomainList(world.redis, crawlKeys(arena, queue).domainList));
    const d = await scope.decide('http://www.c.test/x');
    assert.ok(d.ok && !d.other);
    const batch = new ByDomain();
    batch.add(d.domain, queuedUrl('http://www.c.test/x'), d.other, d.limits);
    assert.equal(await enqueueUrls(queue, arena, first.bloom, batch), 1);
    assert.deepEqual((await rows()).find((r) => r[0] === 'c.test'), ['c.test', 4, 2, 1]);
    // A later kickoff (the arena has queues: workers may hold older answers) changes a.test's line and lists d.test: both made or set now.
    await writeFile(domains, ['a.test,1,1', 'd.test,3,1'].join('\n'));
    const again = await kickoff(world.redis, validateSeed({ arena, domainFiles: [domains], start: ['http://a.test/'] }));
    assert.equal(again.domainsCreated, 1);
    assert.deepEqual((await rows()).filter((r) => r[0] === 'a.test' || r[0] === 'd.test'), [['a.test', 1, 1, 1], ['d.test', 3, 1, 0]]);
    await queue.close();
  });

  it('a list with too many bad lines is refused before anything is written; so is an inline start URL no list names', async () => {
    const file = join(world.dir, 'bad.csv');
    await writeFile(file, Array.from({ length: 100 }, (_, i) => (i % 4 === 0 ? `d${i}.test,-1` : `d${i}.test,1`)).join('\n'));
    const seed = validateSeed({ arena: 'domainfiles-bad', domainFiles: [file], start: ['http://d1.test/'] });
    await assert.rejects(kickoff(world.redis, seed), (e: Error & { code?: string; field?: string }) => {
      assert.equal(e.code, 'WEIR_SEED');
      assert.equal(e.field, 'domainFiles');
      assert.match(e.message, /25 of 100 lines are not domain,rate\[,maxInFlight\] lines \(at most 10 may be\), nothing was queued; the first: .*bad\.csv:1: rate must be/);
      return true;
    });
    assert.deepEqual(await world.redis.keys('*domainfiles-bad*'), [], 'nothing written');
    await writeFile(file, 'd1.test,1\n');
    const unlisted = validateSeed({ arena: 'domainfiles-unlisted', domainFiles: [file], start: ['http://d1.test/', 'http://d2.test/'] });
    await assert.rejects(kickoff(world.redis, unlisted), /seed field start\[1\]: http:\/\/d2\.test\/ is not inside any domain of rateLimits or domainFiles/);
    assert.equal((await new FairQueue(world.redis).stats('domainfiles-unlisted')).queued, 0, 'nothing queued');
  });

  it('a crawl of 1,040 host names: listed sites at their listed rates, start URLs of unlisted ones at the default rate, links to the rest not followed', async () => {
    const web = await HostWeb.start({ names: Array.from({ length: HOSTS }, (_, i) => name(i)), addresses: 8, page });
    try {
      // Sites 0-519 listed (every 40th at 5/s, the rest at 10/s); 1030-1039 only in the start file.
      const listed = Array.from({ length: 520 }, (_, i) => i);
      const rateOf = (i: number): number => (i < 520 ? (i % 40 === 0 ? 5 : 10) : 8);
      const domains = join(world.dir, 'web-domains.csv');
      await writeFile(domains, listed.map((i) => `${name(i)},${rateOf(i)},1`).join('\n'));
      const defaulted = Array.from({ length: 10 }, (_, k) => 1030 + k);
      const starts = join(world.dir, 'web-starts.txt');
      await writeFile(starts, [...Array.from({ length: SEEDS }, (_, i) => i), ...defaulted].map((i) => `${web.origin(name(i))}/`).join('\n'));
      const seed = validateSeed({ arena: 'domainfiles-web', domainFiles: [domains], startFiles: [starts], defaultRate: 8, maxInFlightPerDomain: 1, allowPrivateNetworks: true });
      await kickoff(world.redis, seed);
      // The workers in processes of their own: the sites' arrival stamps are this process's, undelayed by the crawl's CPU.
      const hosts = Object.fromEntries(Array.from({ length: HOSTS }, (_, i) => [name(i), web.addressOf(name(i)) as string]));
      const runner = new URL('../fault/worker-runner.ts', import.meta.url).pathname;
      const cfg = (w: number): string => JSON.stringify({ redisUrl: world.server.url, seed: storableSeed(seed), concurrency: 16, out: join(world.dir, `web-${w}.jsonl`), hosts });
      await Promise.all(
        [0, 1].map(async (w) => {
          const p = spawn(process.execPath, ['--import', 'tsx', runner, cfg(w)], { stdio: ['ignore', 'ignore', 'inherit'] });
          const [code] = (await once(p, 'exit')) as [number | null];
          assert.equal(code, 0, `worker ${w} exited ${code}`);
        }),
      );
      // The sites a crawl may reach: from the start URLs, along home-page links, only into listed or defaulted sites.
      const allowed = new Set([...listed, ...defaulted]);
      const want = new Set<number>();
      const todo = [...Array.from({ length: SEEDS }, (_, i) => i), ...defaulted];
      for (let i = todo.pop(); i !== undefined; i = todo.pop()) {
        if (want.has(i)) continue;
        want.add(i);
        todo.push(...outLinks(i).filter((j) => allowed.has(j)));
      }
      assert.ok(want.size > 100, `the fixture reaches many sites (${want.size})`);
      for (let i = 0; i < HOSTS; i++) {
        const paths = web.pages(name(i)).map((a) => a.path).sort();
        assert.deepEqual(paths, want.has(i) ? ['/', '/a', '/b'] : [], `${name(i)}: ${want.has(i) ? 'each page once' : 'never asked'}`);
      }
      for (const [host, log] of web.arrivals) {
        const i = Number(/^site(\d+)\.test$/.exec(host)?.[1]);
        const { gap, around } = closestPair(log);
        assert.ok(gap >= 1000 / rateOf(i), `${host}: two requests ${gap.toFixed(1)} ms apart at ${rateOf(i)}/s: ${requestTimes(around, around[0]?.at ?? 0)}`);
      }
    } finally {
      await web.close();
    }
  });
});
