import { isIP } from 'node:net';
import { sendEncoded, type RedisClient } from '../../queue/index.js';
import { hostAndPort } from '../urls/index.js';
import type { SeedRate } from '../seed/index.js';

/** A listed domain's limits. */
export interface ListedLimits {
  rate: SeedRate;
  maxInFlight: number;
}

/** A listed domain a URL belongs to: its key (the queue) and limits. */
export interface ListedDomain {
  key: string;
  limits: ListedLimits;
}

/**
 * Host parents a URL's host is looked up under (a listed `example.com`
 * takes `a.b.example.com`): the host and this many of its parent names at
 * most, so a host of a hundred labels costs no more than a usual one.
 */
const MAX_PARENTS = 8;
/** Fields asked in one HMGET. */
const FIELDS_PER_CALL = 2000;
/** Answers a worker keeps per generation; two generations are kept, and the older is dropped when the newer fills or ages. */
const CACHE_PER_GENERATION = 50_000;
/** A generation's age at most: a domain a later kickoff lists is seen by running workers within twice this. */
const GENERATION_MS = 60_000;

const encode = (l: ListedLimits): string => `${l.rate} ${l.maxInFlight}`;

/** HSETNX of each field and value given (at most FIELDS_PER_CALL): how many were new. A batch of a kickoff's new domains in one command, not one each. */
const PUT_NEW = `local n = 0
for i = 1, #ARGV, 2 do n = n + redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) end
return n`;

function decode(v: string | null | undefined): ListedLimits | null {
  if (!v) return null;
  const [rate, cap] = v.split(' ');
  const maxInFlight = Number(cap);
  if (rate === 'unlimited') return { rate, maxInFlight };
  const r = Number(rate);
  return Number.isFinite(r) && r > 0 && Number.isInteger(maxInFlight) ? { rate: r, maxInFlight } : null;
}

/**
 * The keys a URL's host may be listed under, most specific first: for a
 * name, it and its parents, each with the URL's port and without (a key
 * with a port takes only that port); for an IP address, itself.
 */
export function candidateKeys(url: URL): string[] {
  const { host, port } = hostAndPort(url);
  if (isIP(host) !== 0) {
    const shown = isIP(host) === 6 ? `[${host}]` : host;
    return [`${shown}:${port}`, shown];
  }
  const out: string[] = [];
  let at = -1;
  for (let i = 0; i <= MAX_PARENTS; i++) {
    const name = host.slice(at + 1);
    out.push(`${name}:${port}`, name);
    at = host.indexOf('.', at + 1);
    if (at === -1) break;
  }
  return out;
}

/** Two maps: answers are looked up in both and added to the newer, which replaces the older when full or old. A size of 0 keeps nothing. */
class TwoGenerations<V> {
  private newer = new Map<string, V>();
  private older = new Map<string, V>();
  private bornAt = Date.now();

  constructor(private readonly size: number) {}

  get(k: string): V | undefined {
    return this.newer.get(k) ?? this.older.get(k);
  }

  set(k: string, v: V): void {
    if (this.size === 0) return;
    if (this.newer.size >= this.size || Date.now() - this.bornAt > GENERATION_MS) {
      this.older = this.newer;
      this.newer = new Map();
      this.bornAt = Date.now();
    }
    this.newer.set(k, v);
  }
}

/**
 * The arena's list of domains and their limits, too long to hold in every
 * worker (seed domainFiles: 10^6 domains): one Redis hash, field the domain
 * key, written by kickoff. A URL belongs to the longest listed key among
 * its host's (candidateKeys), as with rateLimits keys (urls/domains.ts
 * DomainMatcher). Lookups made in one turn of the event loop go to Redis
 * as one HMGET, and each worker keeps its answers a while (a domain listed
 * later is seen within 2 × GENERATION_MS).
 */
export class DomainList {
  /** By "host port": the listed domain, or null for none. */
  private readonly byHost: TwoGenerations<ListedDomain | null>;
  /** By key: limits, or null when not listed. */
  private readonly byKey: TwoGenerations<ListedLimits | null>;
  private pending: { url: URL; hostPort: string; resolve: (d: ListedDomain | null) => void; reject: (e: unknown) => void }[] = [];

  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
    /** Answers kept per generation: a worker meets the same hosts again and again; kickoff's start URLs mostly once (it keeps few). */
    cacheSize = CACHE_PER_GENERATION,
  ) {
    this.byHost = new TwoGenerations(cacheSize);
    this.byKey = new TwoGenerations(cacheSize);
  }

  /** Lists domains (kickoff); `onlyNew` leaves those already listed as they are. Returns how many were listed now (with onlyNew; else 0). */
  async put(rows: readonly ({ key: string } & ListedLimits)[], onlyNew = false): Promise<number> {
    if (rows.length === 0) return 0;
    // Fields and values, FIELDS_PER_CALL a command, the commands sent together.
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < rows.length; i += FIELDS_PER_CALL) {
      const fields: string[] = [];
      for (const r of rows.slice(i, i + FIELDS_PER_CALL)) fields.push(r.key, encode(r));
      writes.push(onlyNew ? this.send('EVAL', [PUT_NEW, 1, this.key], fields) : this.send('HSET', [this.key], fields));
    }
    const replies = await Promise.all(writes);
    const added = onlyNew ? replies.reduce<number>((n, r) => n + Number(r), 0) : 0;
    // (With onlyNew, a domain listed before keeps its limits: those known here stay.)
    for (const r of rows) if (!onlyNew || !this.byKey.get(r.key)) this.byKey.set(r.key, { rate: r.rate, maxInFlight: r.maxInFlight });
    return added;
  }

  /** The listed domain a (normalized, parsed) URL belongs to, or null. */
  match(url: URL): Promise<ListedDomain | null> {
    const { host, port } = hostAndPort(url);
    const hostPort = `${host} ${port}`;
    const known = this.byHost.get(hostPort);
    if (known !== undefined) return Promise.resolve(known);
    return new Promise((resolve, reject) => {
      if (this.pending.length === 0) queueMicrotask(() => void this.flush());
      this.pending.push({ url, hostPort, resolve, reject });
    });
  }

  /** The listed domain of each of many URLs (a kickoff batch), asked of Redis together: no promise a URL. */
  async matchAll(urls: readonly URL[]): Promise<(ListedDomain | null)[]> {
    const hostPorts = urls.map((u) => {
      const { host, port } = hostAndPort(u);
      return `${host} ${port}`;
    });
    const answers = await this.lookUp(urls.map((url, i) => ({ url, hostPort: hostPorts[i] as string })));
    return hostPorts.map((h) => answers.get(h) ?? null);
  }

  /** A listed domain's limits, or null when it is not listed. */
  async limitsOf(key: string): Promise<ListedLimits | null> {
    const known = this.byKey.get(key);
    if (known !== undefined) return known;
    const limits = decode(await this.redis.hget(this.key, key));
    this.byKey.set(key, limits);
    return limits;
  }

  /** Asks Redis about every host looked up in this turn. */
  private async flush(): Promise<void> {
    const asks = this.pending;
    this.pending = [];
    try {
      const answers = await this.lookUp(asks);
      for (const a of asks) a.resolve(answers.get(a.hostPort) ?? null);
    } catch (err) {
      for (const a of asks) a.reject(err);
    }
  }

  /** The listed domain of each host asked (by "host port"), known ones from the cache; each candidate field asked once, in reads sent together. */
  private async lookUp(asks: readonly { url: URL; hostPort: string }[]): Promise<Map<string, ListedDomain | null>> {
    const candidates = new Map<string, string[]>();
    // (This call's own answers: the cache may drop some of them while it runs.)
    const found = new Map<string, ListedLimits | null>();
    const asked: string[] = [];
    for (const a of asks) {
      if (candidates.has(a.hostPort)) continue;
      const known = this.byHost.get(a.hostPort);
      if (known !== undefined) {
        candidates.set(a.hostPort, known ? [known.key] : []);
        if (known) found.set(known.key, known.limits);
        continue;
      }
      const keys = candidateKeys(a.url);
      candidates.set(a.hostPort, keys);
      for (const k of keys) {
        if (found.has(k)) continue;
        const cached = this.byKey.get(k);
        found.set(k, cached ?? null);
        if (cached === undefined) asked.push(k);
      }
    }
    const chunks: string[][] = [];
    for (let i = 0; i < asked.length; i += FIELDS_PER_CALL) chunks.push(asked.slice(i, i + FIELDS_PER_CALL));
    const replies = await Promise.all(chunks.map((chunk) => this.read(chunk)));
    chunks.forEach((chunk, c) => {
      const values = replies[c] ?? [];
      chunk.forEach((k, j) => {
        const limits = decode(values[j]);
        found.set(k, limits);
        this.byKey.set(k, limits);
      });
    });
    const answers = new Map<string, ListedDomain | null>();
    for (const [hostPort, keys] of candidates) {
      // The longest key wins (a key with a port is longer than the same without); ties go to the more specific host.
      let best: ListedDomain | null = null;
      for (const k of keys) {
        const limits = found.get(k);
        if (limits && (best === null || k.length > best.key.length)) best = { key: k, limits };
      }
      answers.set(hostPort, best);
      this.byHost.set(hostPort, best);
    }
    return answers;
  }

  /** HMGET of `fields` (a kickoff asks 60,000 fields a batch). */
  private read(fields: readonly string[]): Promise<(string | null)[]> {
    return this.send('HMGET', [this.key], fields) as Promise<(string | null)[]>;
  }

  /** A command of many arguments, those after `head` written as one Buffer (sendEncoded). */
  private send(name: string, head: (string | number)[], tail: readonly string[]): Promise<unknown> {
    return sendEncoded(this.redis, name, head, tail);
  }
}
