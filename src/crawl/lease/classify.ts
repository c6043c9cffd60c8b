/**
 * Responses and failures to outcomes: the crawler's error policy in one place.
 */
import { type FetchResult, FetchError } from '../fetch/index.js';
import type { Outcome } from './outcome.js';
import type { PageRecord } from '../output/index.js';

export const RETRY_POLICY = {
  /** Backoff for 5xx and network errors: base × 2^(attempt-1) × jitter(0.5–1.5), capped. */
  retryBaseMs: 1000,
  retryMaxMs: 10 * 60_000,
  /** Retry-After (429/503) is honoured up to this many seconds. */
  maxRetryAfterSeconds: 3600,
  /** A 429 without Retry-After pauses the domain this long. */
  default429Seconds: 30,
  /**
   * A server may ask one URL to wait this many times (429, 503 + Retry-After:
   * pacing, not counted as attempts); the next time it goes to the dead letter.
   */
  maxPacedRetries: 10,
  /** A pause is at least this long, doubling with each time the URL was paced (capped): Retry-After: 0 cannot spin. */
  pacingFloorMs: 1000,
  pacingFloorMaxMs: 60_000,
} as const;

/** What a response is, before any work on its body. */
export type ResponseClass = 'redirect' | 'slow-down' | 'server-error' | 'final';

export function classifyResponse(res: Pick<FetchResult, 'status' | 'headers'>): ResponseClass {
  const { status, headers } = res;
  if (status >= 300 && status < 400 && headers.location !== undefined) return 'redirect';
  if (status === 429 || (status === 503 && headers['retry-after'] !== undefined)) return 'slow-down';
  if (status >= 500) return 'server-error';
  return 'final';
}

/** Retry-After: delta-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterSeconds(value: string | string[] | undefined, nowMs = Date.now()): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined) return null;
  if (/^\s*\d{1,12}\s*$/.test(v)) return Number(v);
  const t = Date.parse(v);
  if (Number.isNaN(t)) return null;
  return Math.max(0, (t - nowMs) / 1000);
}

/**
 * 429, or 503 with Retry-After: pause the domain for the time asked (capped,
 * and at least a floor that doubles with each time this URL was paced), then
 * retry without an attempt; after maxPacedRetries, the dead letter.
 */
export function slowDown(res: Pick<FetchResult, 'status' | 'headers'>, paced = 0, floorMs: number = RETRY_POLICY.pacingFloorMs): Outcome {
  const asked = retryAfterSeconds(res.headers['retry-after']) ?? RETRY_POLICY.default429Seconds;
  const seconds = Math.min(RETRY_POLICY.maxRetryAfterSeconds, asked);
  const reason = `HTTP ${res.status}, Retry-After ${seconds}s`;
  if (paced >= RETRY_POLICY.maxPacedRetries) {
    const why = `the server asked to slow down ${paced + 1} times (${reason})`;
    return { kind: 'fail', reason: why, record: { status: res.status, error: why }, tallies: [['paced', 1], ['errors', 1]] };
  }
  const floor = Math.min(RETRY_POLICY.pacingFloorMaxMs, floorMs * 2 ** paced);
  return { kind: 'pause', ms: Math.max(Math.round(seconds * 1000), floor), reason, tallies: [['paced', 1]] };
}

/** Exponential backoff with jitter for the attempt-th failure. */
export function backoffMs(attempt: number, baseMs: number = RETRY_POLICY.retryBaseMs, random = Math.random): number {
  const backoff = Math.min(RETRY_POLICY.retryMaxMs, baseMs * 2 ** (attempt - 1));
  return Math.round(backoff * (0.5 + random()));
}

/** 5xx and network errors: retry with backoff, counting an attempt (the queue dead-letters after maxAttempts). */
export function retryLater(attempt: number, reason: string, record: Partial<PageRecord>, baseMs?: number): Outcome {
  return { kind: 'retry', delayMs: backoffMs(attempt, baseMs), countAttempt: true, reason, record, tallies: [['retries', 1]] };
}

/** A fetch that produced no response. */
export function fetchFailed(err: unknown, attempt: number, baseMs?: number): Outcome {
  const e = err instanceof FetchError ? err : FetchError.from(err, 0);
  const record = { status: null, elapsedMs: e.elapsedMs };
  // A refused address will be refused again: no point in retrying.
  if (e.code === 'WEIR_PRIVATE_ADDRESS') return { kind: 'fail', reason: e.message, record: { ...record, error: e.message }, tallies: [['errors', 1]] };
  return retryLater(attempt, `${e.code}: ${e.message}`, record, baseMs);
}
