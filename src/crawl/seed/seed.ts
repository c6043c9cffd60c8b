import { readFile, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { LIMITS, validateArenaName } from '../../queue/index.js';
import { bloomParams, maxBloomItems, MAX_BLOOM_BITS } from '../dedupe/index.js';
import { parseDomainKey, DomainMatcher, type DomainKey, normalizeUrl, compileUrlPattern } from '../urls/index.js';
import { duplicateJsonKey, MAX_SEED_BYTES, shown } from './text.js';
import { bool, int, isRecord, nullable, optional, SeedError } from './checks.js';

import { SEED_DEFAULTS } from './defaults.js';
import { adaptivePaceOf, otherDomainsOf, rateOf, revisitOf, type AdaptivePace, type OtherDomains, type RevisitPolicy, type SeedRate } from './policies.js';

export { SeedError } from './checks.js';
export { SEED_DEFAULTS } from './defaults.js';
export type { AdaptivePace, OtherDomains, RevisitPolicy, SeedRate } from './policies.js';

/** A validated seed file. */
export interface Seed {
  arena: string;
  userAgent: string;
  /** The user agent's product token ("weir" in "weir/0.1 (...)"), lowercase: what robots.txt groups are matched on. */
  productToken: string;
  rateLimits: Record<string, SeedRate>;
  start: string[];
  /**
   * Files of start URLs, one per line (gzip allowed), read by kickoff as
   * they stream (seed/start-files.ts); a path is taken from the seed file's
   * folder. With these, `start` may be left out.
   */
  startFiles: string[];
  /**
   * Files of per-domain limits, `domain,rate[,maxInFlight]` a line (gzip
   * allowed), read by kickoff as they stream (seed/domain-files.ts) into the
   * arena's domain list, which workers consult through Redis (links/domain-list.ts):
   * a crawl of 10^6 domains need not be written inline.
   */
  domainFiles: string[];
  /**
   * Start URLs on a domain no list names (rateLimits, domainFiles) join the
   * crawl at this rate, keyed like otherDomains (registrable by default);
   * null: such a start URL is an error.
   */
  defaultRate: SeedRate | null;
  maxDepth: number | null;
  maxPages: number | null;
  maxInFlightPerDomain: number;
  include: string[];
  exclude: string[];
  allowPrivateNetworks: boolean;
  respectNofollow: boolean;
  bloom: { expectedUrls: number; falsePositiveRate: number };
  requestTimeoutMs: number;
  maxBodyBytes: number;
  maxRedirects: number;
  /** true: the `Sitemap:` lines of each in-scope origin's robots.txt; a list: those and these; false: none. */
  sitemaps: boolean | string[];
  /** Sitemaps found (robots.txt, index files) queued at most, across every worker; the seed's own list is not counted. */
  maxSitemaps: number;
  /**
   * Shards the arena's queues are split over (src/queue/shards.ts), fixed at
   * the first kickoff; null: 1 on a single Redis, 4 per master on a Cluster
   * (or whatever the arena already has).
   */
  shards: number | null;
  /**
   * Time added to 1/R between two requests' writes to a domain, for the
   * spread in their delivery and the site's clock (lease/pacer.ts SendPacer.margin);
   * null: 25 ms.
   */
  sendMarginMs: number | null;
  /** Links to domains rateLimits does not name: null (the seed's 'ignore') drops them; else they are followed with these limits. */
  otherDomains: OtherDomains | null;
  /** Pages fetched from one domain (its queue) at most, across every worker; null: no quota. */
  maxPagesPerDomain: number | null;
  /** Every domain's pace learned from its site, never faster than its limit; null: off (each keeps its limit). */
  adaptivePace: AdaptivePace | null;
  /**
   * Pages at most this many links from a start URL go to their queue's
   * front band, served before deeper pages of their domain (sitemaps always
   * do); null: only sitemaps.
   */
  priorityDepth: number | null;
  /**
   * Politeness per server: every URL goes to the queue of the address its
   * host resolves to ('@<address>'), so sites on one server share one limit,
   * the strictest of theirs (links/servers.ts).
   */
  perServer: boolean;
  /** Pages fetched again on schedules learnt from how often each changes, with conditional requests; null: each URL once. */
  revisit: RevisitPolicy | null;
}


const KNOWN = new Set([
  'arena', 'userAgent', 'rateLimits', 'start', 'startFiles', 'domainFiles', 'defaultRate', 'maxDepth', 'maxPages', 'maxInFlightPerDomain', 'include', 'exclude',
  'allowPrivateNetworks', 'respectNofollow', 'bloom', 'requestTimeoutMs', 'maxBodyBytes', 'maxRedirects', 'sitemaps', 'maxSitemaps', 'shards', 'sendMarginMs',
  'otherDomains', 'maxPagesPerDomain', 'adaptivePace', 'priorityDepth', 'perServer', 'revisit',
]);

function regexList(field: string, v: unknown): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new SeedError(field, 'must be a list of regular expressions');
  return v.map((p, i) => {
    if (typeof p !== 'string' || p === '') throw new SeedError(`${field}[${i}]`, 'must be a non-empty string');
    try {
      compileUrlPattern(p);
    } catch (err) {
      throw new SeedError(`${field}[${i}]`, `is not a regular expression weir can run in linear time (RE2 syntax: no look-around, no back-references): ${(err as Error).message}`);
    }
    return p;
  });
}

function arenaOf(v: unknown): string {
  if (v === undefined) throw new SeedError('arena', 'is required');
  if (typeof v !== 'string') throw new SeedError('arena', 'must be a string');
  try {
    validateArenaName(v);
  } catch {
    throw new SeedError('arena', `must be 1-64 letters, digits, '_', '.' or '-', got ${JSON.stringify(v)}`);
  }
  return v;
}

/** The user agent and its product token (what robots.txt groups are matched on). */
function userAgentOf(v: unknown): { userAgent: string; productToken: string } {
  const userAgent = v ?? SEED_DEFAULTS.userAgent;
  if (typeof userAgent !== 'string' || userAgent.trim() === '' || userAgent.length > 512) {
    throw new SeedError('userAgent', 'must be a one-line string of at most 512 characters');
  }
  // It is sent as a header value: HTTP clients refuse control characters and
  // text outside ASCII (undici then fails every request), so weir refuses them first.
  const bad = [...userAgent].find((ch) => ch !== '\t' && (ch < ' ' || ch > '~'));
  if (bad !== undefined) throw new SeedError('userAgent', `must be printable ASCII (it is sent as a header), has ${JSON.stringify(bad)} (U+${(bad.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')})`);
  const productToken = /^([A-Za-z_-]+)/.exec(userAgent.trim())?.[1]?.toLowerCase();
  if (!productToken) throw new SeedError('userAgent', 'must start with a product token of letters, "_" or "-" (like "weir/0.1"), which robots.txt groups are matched on');
  return { userAgent, productToken };
}


function rateLimitsOf(v: unknown, listed: boolean): { rateLimits: Record<string, SeedRate>; matcher: DomainMatcher } {
  if (v === undefined && listed) return { rateLimits: {}, matcher: new DomainMatcher([]) };
  if (v === undefined) throw new SeedError('rateLimits', 'is required (or domainFiles, or defaultRate)');
  if (!isRecord(v)) throw new SeedError('rateLimits', 'must map domains to requests per second');
  const rateLimits: Record<string, SeedRate> = {};
  const keys: DomainKey[] = [];
  for (const [rawKey, rate] of Object.entries(v)) {
    const field = `rateLimits.${rawKey}`;
    const key = parseDomainKey(rawKey);
    if (typeof key === 'string') throw new SeedError(field, `domain ${key}`);
    if (Object.hasOwn(rateLimits, key.key)) throw new SeedError(field, `is the same domain as another key (${key.key})`);
    rateLimits[key.key] = rateOf(field, rate);
    keys.push(key);
  }
  if (keys.length === 0 && !listed) throw new SeedError('rateLimits', 'must name at least one domain (or give domainFiles, or defaultRate)');
  return { rateLimits, matcher: new DomainMatcher(keys) };
}

/**
 * One URL of a seed's list: absolute http(s), inside a domain of rateLimits
 * (null `matcher`: the seed has domain lists or a default rate, and kickoff
 * checks its domain against them); normalized.
 */
function inDomainUrl(field: string, u: unknown, matcher: DomainMatcher | null): string {
  if (typeof u !== 'string') throw new SeedError(field, 'must be a URL string');
  const n = normalizeUrl(u);
  if (!n) throw new SeedError(field, `is not an absolute http(s) URL: ${JSON.stringify(u)}`);
  if (matcher && !matcher.match(new URL(n))) throw new SeedError(field, `${n} is not inside any domain of rateLimits`);
  return n;
}

function startOf(v: unknown, matcher: DomainMatcher | null, files: string[]): string[] {
  if (v === undefined && files.length > 0) return [];
  if (v === undefined) throw new SeedError('start', 'is required (or startFiles)');
  if (!Array.isArray(v) || (v.length === 0 && files.length === 0)) throw new SeedError('start', 'must be a non-empty list of URLs');
  return v.map((u, i) => inDomainUrl(`start[${i}]`, u, matcher));
}

function filesOf(field: string, v: unknown): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((f) => typeof f !== 'string' || f.trim() === '' || f.includes('\0'))) throw new SeedError(field, `must be a list of file paths, got ${shown(v)}`);
  return v as string[];
}

function sitemapsOf(v: unknown, matcher: DomainMatcher | null): Seed['sitemaps'] {
  if (v === undefined) return SEED_DEFAULTS.sitemaps;
  if (typeof v === 'boolean') return v;
  if (!Array.isArray(v)) throw new SeedError('sitemaps', `must be true, false or a list of sitemap URLs, got ${shown(v)}`);
  return v.map((u, i) => inDomainUrl(`sitemaps[${i}]`, u, matcher));
}

/** The Bloom filter's size; `shards` parts of at most one Redis string each (an unset count: one). */
function bloomOf(v: unknown, shards: number | null): Seed['bloom'] {
  const bloom = { ...SEED_DEFAULTS.bloom };
  if (v === undefined) return bloom;
  if (!isRecord(v)) throw new SeedError('bloom', 'must be a mapping with expectedUrls and falsePositiveRate');
  for (const k of Object.keys(v)) if (k !== 'expectedUrls' && k !== 'falsePositiveRate') throw new SeedError(`bloom.${k}`, 'is not a known field');
  const expectedUrls = v.expectedUrls === undefined ? bloom.expectedUrls : int('bloom.expectedUrls', v.expectedUrls, 1, 1_000_000_000);
  const fp = v.falsePositiveRate ?? bloom.falsePositiveRate;
  if (typeof fp !== 'number' || !(fp > 0 && fp < 1)) throw new SeedError('bloom.falsePositiveRate', `must be a number between 0 and 1, got ${shown(fp)}`);
  const bits = bloomParams(expectedUrls, fp).bits;
  const parts = shards ?? 1;
  if (bits > MAX_BLOOM_BITS * parts) {
    const most = maxBloomItems(fp);
    const need = Math.ceil(bits / MAX_BLOOM_BITS);
    throw new SeedError(
      'bloom.expectedUrls',
      `${expectedUrls} URLs at a false-positive rate of ${fp} need a bitmap of ${bits} bits, over the ${MAX_BLOOM_BITS} bits one Redis string holds${parts === 1 ? '' : ` in each of ${parts} shards`}: at most ${most} URLs per shard at this rate; set shards to ${need} or more (each shard holds a part of the bitmap), or raise falsePositiveRate`,
    );
  }
  return { expectedUrls, falsePositiveRate: fp };
}


/** Validates parsed seed data. Throws SeedError naming the field; never touches Redis. */
export function validateSeed(data: unknown): Seed {
  if (!isRecord(data)) throw new SeedError('', 'must be a mapping (YAML) or an object (JSON) at the top level');
  for (const k of Object.keys(data)) if (!KNOWN.has(k)) throw new SeedError(k, `is not a known field (known: ${[...KNOWN].join(', ')})`);
  const arena = arenaOf(data.arena);
  const domainFiles = filesOf('domainFiles', data.domainFiles);
  const defaultRate = data.defaultRate === undefined || data.defaultRate === null ? null : rateOf('defaultRate', data.defaultRate);
  const listed = domainFiles.length > 0 || defaultRate !== null;
  const { rateLimits, matcher } = rateLimitsOf(data.rateLimits, listed);
  // With domain lists, a start URL's domain is known only to kickoff (which reads them).
  const urlMatcher = listed ? null : matcher;
  const startFiles = filesOf('startFiles', data.startFiles);
  const d = SEED_DEFAULTS;
  const shards = nullable(data.shards, (v) => int('shards', v, 1, LIMITS.maxShards));
  return {
    arena,
    ...userAgentOf(data.userAgent),
    rateLimits,
    start: startOf(data.start, urlMatcher, startFiles),
    startFiles,
    domainFiles,
    defaultRate,
    maxDepth: nullable(data.maxDepth, (v) => int('maxDepth', v, 0, 1_000_000)),
    maxPages: nullable(data.maxPages, (v) => int('maxPages', v, 1, Number.MAX_SAFE_INTEGER)),
    maxInFlightPerDomain: optional(data.maxInFlightPerDomain, d.maxInFlightPerDomain, (v) => int('maxInFlightPerDomain', v, 1, 10_000)),
    include: regexList('include', data.include),
    exclude: regexList('exclude', data.exclude),
    allowPrivateNetworks: optional(data.allowPrivateNetworks, d.allowPrivateNetworks, (v) => bool('allowPrivateNetworks', v)),
    respectNofollow: optional(data.respectNofollow, d.respectNofollow, (v) => bool('respectNofollow', v)),
    bloom: bloomOf(data.bloom, shards),
    requestTimeoutMs: optional(data.requestTimeoutMs, d.requestTimeoutMs, (v) => int('requestTimeoutMs', v, 100, 3_600_000)),
    maxBodyBytes: optional(data.maxBodyBytes, d.maxBodyBytes, (v) => int('maxBodyBytes', v, 1024, 1024 * 1024 * 1024)),
    maxRedirects: optional(data.maxRedirects, d.maxRedirects, (v) => int('maxRedirects', v, 0, 100)),
    sitemaps: sitemapsOf(data.sitemaps, urlMatcher),
    maxSitemaps: optional(data.maxSitemaps, d.maxSitemaps, (v) => int('maxSitemaps', v, 0, 10_000_000)),
    shards,
    sendMarginMs: nullable(data.sendMarginMs, (v) => int('sendMarginMs', v, 0, LIMITS.maxAheadMs)),
    otherDomains: otherDomainsOf(data.otherDomains),
    maxPagesPerDomain: nullable(data.maxPagesPerDomain, (v) => int('maxPagesPerDomain', v, 1, Number.MAX_SAFE_INTEGER)),
    adaptivePace: adaptivePaceOf(data.adaptivePace),
    priorityDepth: nullable(data.priorityDepth, (v) => int('priorityDepth', v, 0, 1_000_000)),
    perServer: optional(data.perServer, false, (v) => bool('perServer', v)),
    revisit: revisitOf(data.revisit),
  };
}

/** Whether the seed's domains are partly in a list kept in Redis (domainFiles, or start URLs' domains at defaultRate). */
export const hasDomainList = (seed: Pick<Seed, 'domainFiles' | 'defaultRate'>): boolean => seed.domainFiles.length > 0 || seed.defaultRate !== null;

/** The seed as stored in the arena: its fields without the derived ones (validateSeed reads it back). */
export function storableSeed(seed: Seed): Record<string, unknown> {
  const { productToken: _derived, ...fields } = seed;
  return fields;
}

/** Parses seed text: JSON when it looks like JSON, else YAML. */
export function parseSeedText(text: string, name = 'seed'): Seed {
  if (text.length > MAX_SEED_BYTES) throw new SeedError('', `${name} is over ${MAX_SEED_BYTES} bytes: a seed is configuration (domains, limits, start URLs)`);
  if (/^\s*[{[]/.test(text.slice(0, 1024))) {
    const dup = duplicateJsonKey(text);
    if (dup !== null) throw new SeedError(dup, 'appears twice in the same object: JSON would keep the last one silently');
  }
  let data: unknown;
  try {
    data = /^\s*[{[]/.test(text) ? JSON.parse(text) : parseYaml(text, { maxAliasCount: 100 });
  } catch (err) {
    throw new SeedError('', `${name} is not valid YAML or JSON: ${(err as Error).message.split('\n')[0]}`);
  }
  return validateSeed(data);
}

export async function loadSeedFile(path: string): Promise<Seed> {
  let text: string;
  try {
    const { size } = await stat(path);
    if (size > MAX_SEED_BYTES) throw new SeedError('', `${path} is ${size} bytes, over the ${MAX_SEED_BYTES}-byte limit: a seed is configuration (domains, limits, start URLs)`);
    text = await readFile(path, 'utf8');
  } catch (err) {
    if (err instanceof SeedError) throw err;
    throw new SeedError('', `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const seed = parseSeedText(text, path);
  // (Start and domain files are named from the seed file's folder, wherever weir runs.)
  const from = (f: string): string => resolve(dirname(path), f);
  return { ...seed, startFiles: seed.startFiles.map(from), domainFiles: seed.domainFiles.map(from) };
}
