/** The seed's policy fields that are mappings of their own: otherDomains, adaptivePace, revisit; and rates. */
import type { NewDomainKeying } from '../urls/index.js';
import { int, isRecord, optional, SeedError } from './checks.js';
import { SEED_DEFAULTS } from './defaults.js';
import { shown } from './text.js';

/** Each page fetched again on a schedule of its own (revisit/schedule.ts states the rule). */
export interface RevisitPolicy {
  /** The shortest time between two visits of a URL. */
  minIntervalSeconds: number;
  /** The time from a URL's first visit to its second (a cache lifetime the site gives may lengthen it). */
  initialIntervalSeconds: number;
  /** The longest time between two visits. */
  maxIntervalSeconds: number;
  /** URLs kept for revisits at most, across every worker; a page past that is visited once, and counted. */
  maxUrls: number;
  /** A page answering 404 or 410 after it had been there is visited this many more times, then dropped, and counted. */
  goneAfter: number;
}

/** A pace learned from each site's response times and errors, shared by every worker (lua/pace.lua states the rule). */
export interface AdaptivePace {
  /** The target interval between requests is this × the site's smoothed response time. */
  delayFactor: number;
  /** The slowest the pace may become: this many ms between requests. */
  maxDelayMs: number;
}

/** How a crawl treats links to domains its rateLimits does not name: null ignores them. */
export interface OtherDomains {
  /** The politeness unit of a new domain: its host, or its registrable domain (eTLD+1). */
  key: NewDomainKeying;
  /** Requests per second to each new domain (robots.txt's Crawl-delay may slow one further). */
  rate: SeedRate;
  /** Fetches of one new domain in flight at once. */
  maxInFlight: number;
  /** Most new domains the crawl creates, across every worker; links to more are dropped and counted. */
  maxDomains: number;
}
export type SeedRate = number | 'unlimited';

export function rateOf(field: string, rate: unknown): SeedRate {
  if (rate === 'unlimited') return 'unlimited';
  if (typeof rate === 'number' && Number.isFinite(rate) && rate > 0 && rate >= 0.000001 && rate <= 10_000_000) return rate;
  throw new SeedError(field, `must be requests per second (a number > 0, fractions allowed) or "unlimited", got ${shown(rate)}`);
}
const OTHER_DOMAIN_FIELDS = new Set(['key', 'rate', 'maxInFlight', 'maxDomains']);

/** 'ignore' (the default), 'follow' (with the defaults), or a mapping of the fields to follow with. */
export function otherDomainsOf(v: unknown): OtherDomains | null {
  if (v === undefined || v === null || v === 'ignore') return null;
  const d = SEED_DEFAULTS.otherDomains;
  if (v === 'follow') return { ...d };
  if (!isRecord(v)) throw new SeedError('otherDomains', `must be "ignore", "follow" or a mapping of key, rate, maxInFlight and maxDomains (to follow with), got ${shown(v)}`);
  for (const k of Object.keys(v)) if (!OTHER_DOMAIN_FIELDS.has(k)) throw new SeedError(`otherDomains.${k}`, `is not a known field (known: ${[...OTHER_DOMAIN_FIELDS].join(', ')})`);
  const key = v.key ?? d.key;
  if (key !== 'host' && key !== 'registrable') throw new SeedError('otherDomains.key', `must be "host" or "registrable", got ${shown(key)}`);
  return {
    key,
    rate: v.rate === undefined ? d.rate : rateOf('otherDomains.rate', v.rate),
    maxInFlight: optional(v.maxInFlight, d.maxInFlight, (x) => int('otherDomains.maxInFlight', x, 1, 10_000)),
    maxDomains: optional(v.maxDomains, d.maxDomains, (x) => int('otherDomains.maxDomains', x, 1, 100_000_000)),
  };
}

/** false or absent: off; true: the defaults; or a mapping of delayFactor and maxDelayMs. */
export function adaptivePaceOf(v: unknown): AdaptivePace | null {
  if (v === undefined || v === null || v === false) return null;
  const d = SEED_DEFAULTS.adaptivePace;
  if (v === true) return { ...d };
  if (!isRecord(v)) throw new SeedError('adaptivePace', `must be true, false or a mapping of delayFactor and maxDelayMs, got ${shown(v)}`);
  for (const k of Object.keys(v)) if (k !== 'delayFactor' && k !== 'maxDelayMs') throw new SeedError(`adaptivePace.${k}`, 'is not a known field (known: delayFactor, maxDelayMs)');
  const factor = v.delayFactor ?? d.delayFactor;
  if (typeof factor !== 'number' || !Number.isFinite(factor) || factor < 0 || factor > 1000) throw new SeedError('adaptivePace.delayFactor', `must be a number from 0 to 1000, got ${shown(factor)}`);
  return { delayFactor: factor, maxDelayMs: optional(v.maxDelayMs, d.maxDelayMs, (x) => int('adaptivePace.maxDelayMs', x, 1, 86_400_000)) };
}

const REVISIT_FIELDS = ['minIntervalSeconds', 'initialIntervalSeconds', 'maxIntervalSeconds', 'maxUrls', 'goneAfter'] as const;

/** false or absent: off; true: the defaults; or a mapping of REVISIT_FIELDS. */
export function revisitOf(v: unknown): RevisitPolicy | null {
  if (v === undefined || v === null || v === false) return null;
  const d = SEED_DEFAULTS.revisit;
  if (v === true) return { ...d };
  if (!isRecord(v)) throw new SeedError('revisit', `must be true, false or a mapping of ${REVISIT_FIELDS.join(', ')}, got ${shown(v)}`);
  for (const k of Object.keys(v)) if (!(REVISIT_FIELDS as readonly string[]).includes(k)) throw new SeedError(`revisit.${k}`, `is not a known field (known: ${REVISIT_FIELDS.join(', ')})`);
  const year = 365 * 86_400;
  const min = optional(v.minIntervalSeconds, d.minIntervalSeconds, (x) => int('revisit.minIntervalSeconds', x, 1, year));
  const max = optional(v.maxIntervalSeconds, Math.max(min, d.maxIntervalSeconds), (x) => int('revisit.maxIntervalSeconds', x, min, year));
  const initial = optional(v.initialIntervalSeconds, Math.min(max, Math.max(min, d.initialIntervalSeconds)), (x) => int('revisit.initialIntervalSeconds', x, min, max));
  return {
    minIntervalSeconds: min,
    initialIntervalSeconds: initial,
    maxIntervalSeconds: max,
    maxUrls: optional(v.maxUrls, d.maxUrls, (x) => int('revisit.maxUrls', x, 1, 10_000_000_000)),
    goneAfter: optional(v.goneAfter, d.goneAfter, (x) => int('revisit.goneAfter', x, 0, 1000)),
  };
}
