import type { DomainStats } from '../crawl/counters/index.js';

/** Columns the table sorts by. */
export const SORT_KEYS = ['domain', 'queued', 'leased', 'done', 'pages', 'failed', 'dead', 'robotsBlocked', 'rateLimit', 'achievedRate', 'waitingFor'] as const;
export type SortKey = (typeof SORT_KEYS)[number];

export interface ViewQuery {
  /** Substring of the domain, lowercase; '' for all. */
  q: string;
  sort: SortKey;
  dir: 'asc' | 'desc';
  page: number;
  size: number;
}

export const VIEW_LIMITS = { maxSearchChars: 200, maxPageSize: 200, defaultPageSize: 25, maxPage: 1_000_000 } as const;

/** A bad query parameter, named: the server answers 400 with it. */
export class ViewQueryError extends Error {}

/** Reads the table's query from a URL's parameters; unknown parameters are ignored. */
export function parseViewQuery(params: URLSearchParams): ViewQuery {
  const q = (params.get('q') ?? '').trim().toLowerCase();
  if (q.length > VIEW_LIMITS.maxSearchChars) throw new ViewQueryError(`q: at most ${VIEW_LIMITS.maxSearchChars} characters`);
  const sort = params.get('sort') ?? 'domain';
  if (!(SORT_KEYS as readonly string[]).includes(sort)) throw new ViewQueryError(`sort: one of ${SORT_KEYS.join(', ')}`);
  const dir = params.get('dir') ?? (sort === 'domain' || sort === 'waitingFor' ? 'asc' : 'desc');
  if (dir !== 'asc' && dir !== 'desc') throw new ViewQueryError('dir: asc or desc');
  const page = intParam(params, 'page', 0, 0, VIEW_LIMITS.maxPage);
  const size = intParam(params, 'size', VIEW_LIMITS.defaultPageSize, 1, VIEW_LIMITS.maxPageSize);
  return { q, sort: sort as SortKey, dir, page, size };
}

function intParam(params: URLSearchParams, name: string, fallback: number, min: number, max: number): number {
  const text = params.get(name);
  if (text === null || text === '') return fallback;
  if (!/^\d{1,7}$/.test(text) || Number(text) < min || Number(text) > max) throw new ViewQueryError(`${name}: a whole number from ${min} to ${max}`);
  return Number(text);
}

/** Sort value: 'unlimited' sorts above every number. */
const value = (d: DomainStats, key: SortKey): number | string => {
  const v = d[key];
  return v === 'unlimited' ? Infinity : v;
};

/** The rows of one page: filtered by substring (no patterns: bounded), sorted, sliced. */
export function selectRows(domains: DomainStats[], query: ViewQuery): { matched: number; rows: DomainStats[] } {
  const found = query.q === '' ? [...domains] : domains.filter((d) => d.domain.includes(query.q));
  const sign = query.dir === 'asc' ? 1 : -1;
  found.sort((a, b) => {
    const x = value(a, query.sort);
    const y = value(b, query.sort);
    const c = x < y ? -1 : x > y ? 1 : 0;
    return c !== 0 ? sign * c : a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0;
  });
  const start = query.page * query.size;
  return { matched: found.length, rows: found.slice(start, start + query.size) };
}
