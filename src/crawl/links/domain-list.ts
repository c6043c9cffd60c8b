import { isIP } from 'node:net';
import { sendEncoded, type RedisClient } from '../../queue/index.js';
import { hostAndPort } from '../urls/index.js';
import type { SeedRate } from '../seed/index.js';
import { HashedKeyMap } from './hashed-keys.js';

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

/** Domains a list held in this process (ListCopy) has at most: 2^21 slots of 12 bytes, 24 MB. */
const COPY_MAX_KEYS = 1_000_000;
/** Different limits a ListCopy holds at most (a domain's value is their index). */
const COPY_MAX_LIMITS = 65_536;

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

/** Whether a domain key names a port ("example.com:8080", "[::1]:80"): it ends in a colon and digits. */
function namesPort(key: string): boolean {
  let i = key.length - 1;
  while (i >= 0 && key.charCodeAt(i) >= 0x30 && key.charCodeAt(i) <= 0x39) i--;
  return i < key.length - 1 && key.charCodeAt(i) === 0x3a;
}

/**
 * The whole list, held in this process: each domain as an 80-bit hash with
 * the index of its limits (hashed-keys.ts; 12 bytes a slot), for a kickoff
 * that lists every domain itself. False from a setter: it would hold more
 * than COPY_MAX_KEYS domains or COPY_MAX_LIMITS different limits.
 */
class ListCopy {
  private readonly domains: HashedKeyMap;
  private readonly limits: ListedLimits[] = [];
  private readonly limitIds = new Map<string, number>();
  /** Whether any key names a port: else a name is not looked up with its URL's port (half of match's lookups, each a likely cache miss in a table of 24 MB). */
  private portKeys = false;

  constructor(expected: number) {
    this.domains = new HashedKeyMap(Math.min(expected, COPY_MAX_KEYS), COPY_MAX_KEYS);
  }

  get size(): number {
    return this.domains.size;
  }

  get(key: string): ListedLimits | null {
    const id = this.domains.get(key);
    return id === undefined ? null : (this.limits[id] as ListedLimits);
  }

  /**
   * The listed domain a URL belongs to, as longestListed finds it among
   * candidateKeys, without making the keys it looks up (a kickoff places
   * 10^6 URLs, four keys each): only the one that wins.
   */
  match(url: URL): ListedDomain | null {
    const { host, port } = hostAndPort(url);
    if (isIP(host) !== 0) return longestListed(candidateKeys(url), (k) => this.get(k));
    const withPort = `:${port}`;
    // (The winner so far: where its name starts, its suffix, its limits' id.)
    let [bestFrom, bestSuffix, bestId, bestLength] = [0, '', -1, -1];
    let from = 0;
    for (let i = 0; i <= MAX_PARENTS; i++) {
      // The name with the URL's port, then without.
      for (let w = this.portKeys ? 0 : 1; w < 2; w++) {
        const suffix = w === 0 ? withPort : '';
        const length = host.length - from + suffix.length;
        if (length <= bestLength) continue;
        const id = this.domains.get(host, from, suffix);
        if (id === undefined) continue;
        [bestFrom, bestSuffix, bestId, bestLength] = [from, suffix, id, length];
      }
      const dot = host.indexOf('.', from);
      if (dot === -1) break;
      from = dot + 1;
    }
    return bestId === -1 ? null : { key: host.slice(bestFrom) + bestSuffix, limits: this.limits[bestId] as ListedLimits };
  }

  /** Holds `key` with `limits` (`code`: encode(limits), when the caller has it). */
  set(key: string, limits: ListedLimits, code = encode(limits)): boolean {
    let id = this.limitIds.get(code);
    if (id === undefined) {
      if (this.limits.length >= COPY_MAX_LIMITS) return false;
      id = this.limits.length;
      this.limits.push({ rate: limits.rate, maxInFlight: limits.maxInFlight });
      this.limitIds.set(code, id);
    }
    if (!this.domains.set(key, id)) return false;
    this.portKeys ||= namesPort(key);
    return true;
  }
}

/** Of a host's candidate keys (most specific first), the listed one that wins: the longest (a key with a port is longer than the same without); a tie goes to the more specific host. */
function longestListed(keys: readonly string[], limitsOf: (key: string) => ListedLimits | null): ListedDomain | null {
  let best: ListedDomain | null = null;
  for (const k of keys) {
    if (best !== null && k.length <= best.key.length) continue;
    const limits = limitsOf(k);
    if (limits) best = { key: k, limits };
  }
  return best;
}

/** Two maps: answers are looked up in both and added to the newer, which replaces the older when full or old. A size of 0 keeps nothing. */
class TwoGenerations<V> {
  private newer = new Map<string, V>();
  private older = new Map<string, V>();
  private bornAt = Date.now();

  constructor(private readonly size: number) {}

  /** Whether it keeps anything (a size of 0 keeps nothing). */
  get keeps(): boolean {
    return this.size > 0;
  }

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
  /** The list held here while this process is its only writer (keepCopyIfEmpty), else null. */
  private copy: ListCopy | null = null;
  /** The list's length asked ahead (askLengthAhead) for the next matchAll, with the copy's size then. */
  private lengthAhead: { size: number; length: Promise<number> } | null = null;

  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
    /** Answers kept per generation: a worker meets the same hosts again and again; kickoff's start URLs mostly once (it keeps few). */
    cacheSize = CACHE_PER_GENERATION,
  ) {
    this.byHost = new TwoGenerations(cacheSize);
    this.byKey = new TwoGenerations(cacheSize);
  }

  /**
   * A kickoff that finds the list empty writes all of it (workers never
   * write it): from then on this process holds it too, every domain it
   * puts, and matchAll answers from that copy, asking Redis only the
   * list's length (a batch of 5,000 start URLs: no field of their hosts'
   * 20,000 candidate keys read and decoded, no map of the answers made). A
   * length other than the copy's means another writer (a second kickoff
   * at once): the copy is dropped and Redis asked again, as it is when the
   * copy would grow past COPY_MAX_KEYS domains. `expected`: domains the
   * kickoff will list (its table made for them at once). True when kept.
   */
  async keepCopyIfEmpty(expected: number): Promise<boolean> {
    this.copy = (await this.redis.hlen(this.key)) === 0 ? new ListCopy(expected) : null;
    return this.copy !== null;
  }

  /** Lists domains (kickoff); `onlyNew` leaves those already listed as they are. Returns how many were listed now (with onlyNew; else 0). */
  async put(rows: readonly ({ key: string } & ListedLimits)[], onlyNew = false): Promise<number> {
    if (rows.length === 0) return 0;
    // (Each row's limits encoded once: the copy's index of them and the list's value.)
    const values = rows.map(encode);
    // (The copy changes as the commands are sent: a length asked after them counts them.)
    if (this.copy) {
      for (let i = 0; i < rows.length; i++) {
        const r = rows[i] as { key: string } & ListedLimits;
        if (onlyNew && this.copy.get(r.key) !== null) continue;
        if (!this.copy.set(r.key, r, values[i])) {
          this.copy = null;
          break;
        }
      }
    }
    // Fields and values, FIELDS_PER_CALL a command, the commands sent together.
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < rows.length; i += FIELDS_PER_CALL) {
      const fields: string[] = [];
      for (let j = i; j < Math.min(rows.length, i + FIELDS_PER_CALL); j++) fields.push((rows[j] as { key: string }).key, values[j] as string);
      writes.push(onlyNew ? this.send('EVAL', [PUT_NEW, 1, this.key], fields) : this.send('HSET', [this.key], fields));
    }
    const replies = await Promise.all(writes);
    const added = onlyNew ? replies.reduce<number>((n, r) => n + Number(r), 0) : 0;
    // (With onlyNew, a domain listed before keeps its limits: those known here stay. A kickoff keeps no answers.)
    if (this.byKey.keeps) for (const r of rows) if (!onlyNew || !this.byKey.get(r.key)) this.byKey.set(r.key, { rate: r.rate, maxInFlight: r.maxInFlight });
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

  /**
   * The listed domain of each of many URLs (a kickoff batch), asked of
   * Redis together (or of the copy held here): no promise a URL. With a
   * copy, the list's length is asked first (or taken as asked ahead:
   * askLengthAhead), and a length other than the copy's when asked drops it.
   */
  async matchAll(urls: readonly URL[]): Promise<(ListedDomain | null)[]> {
    if (this.copy) {
      const asked = this.lengthAhead ?? this.askLength(this.copy);
      this.lengthAhead = null;
      if ((await asked.length) !== asked.size) this.copy = null;
    }
    const copy = this.copy;
    if (copy) return urls.map((u) => copy.match(u));
    const hostPorts = urls.map((u) => {
      const { host, port } = hostAndPort(u);
      return `${host} ${port}`;
    });
    const answers = await this.lookUp(urls.map((url, i) => ({ url, hostPort: hostPorts[i] as string })));
    return hostPorts.map((h) => answers.get(h) ?? null);
  }

  /**
   * Asks the list's length now for the next matchAll, while a copy is held.
   * A kickoff asks it after a batch's own writes and before the batch's
   * enqueue calls, on the one connection: the next batch is placed on an
   * answer that counts every write this process sent, without waiting
   * behind those calls (Redis works through them meanwhile).
   */
  askLengthAhead(): void {
    if (this.copy) this.lengthAhead = this.askLength(this.copy);
  }

  /** The list's length, asked now, and the copy's size as it is now (the copy grows as puts are sent; the length, sent after them on one connection, counts them). */
  private askLength(copy: ListCopy): { size: number; length: Promise<number> } {
    const length = this.redis.hlen(this.key);
    // (Awaited by the matchAll that takes it; none may, when no batch follows.)
    length.catch(() => undefined);
    return { size: copy.size, length };
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
      const best = longestListed(keys, (k) => found.get(k) ?? null);
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
