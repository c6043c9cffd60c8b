/**
 * Argument checks made before a script is called (the scripts make the same
 * ones: a bad argument never reaches a write). Each throws a
 * QueueArgumentError with a stable code.
 */
import { QueueArgumentError, type QueueErrorCode } from './errors.js';
import { LIMITS } from './limits.js';

export function bad(message: string, code: QueueErrorCode = 'WEIR_BAD_ARGS'): never {
  throw new QueueArgumentError(code, message);
}

export function checkInt(name: string, v: unknown, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    bad(`${name} must be an integer in [${min}, ${max}], got ${String(v)}`);
  }
  return v;
}

/** Queue names: 1..maxNameBytes bytes, any characters but NUL (the scripts refuse it too: lua/includes/record.lua). */
export function checkName(kind: string, name: unknown): string {
  if (typeof name !== 'string' || name.length === 0 || Buffer.byteLength(name) > LIMITS.maxNameBytes) {
    bad(`${kind} must be a non-empty string of at most ${LIMITS.maxNameBytes} bytes`, 'WEIR_BAD_NAME');
  }
  if (name.includes('\0')) bad(`${kind} must not hold a NUL byte`, 'WEIR_BAD_NAME');
  return name;
}

/** Rates checkRate wrote, and how (a kickoff's batch of new queues most often shares a few: a domain file's rates); emptied when it holds RATE_TEXTS_MAX. */
const rateTexts = new Map<number, string>();
const RATE_TEXTS_MAX = 256;

/** A rate as the script takes it: 'unlimited', or the number with all 17 significant digits. */
export function checkRate(queue: string, rate: unknown): string {
  if (rate === 'unlimited') return 'unlimited';
  const known = typeof rate === 'number' ? rateTexts.get(rate) : undefined;
  if (known !== undefined) return known;
  if (typeof rate !== 'number' || !Number.isFinite(rate) || rate < LIMITS.minRate || rate > LIMITS.maxRate) {
    bad(
      `rate of queue ${queue} must be a number in [${LIMITS.minRate}, ${LIMITS.maxRate}] or 'unlimited', got ${String(rate)}`,
      'WEIR_BAD_RATE',
    );
  }
  if (rateTexts.size >= RATE_TEXTS_MAX) rateTexts.clear();
  const text = rate.toPrecision(17);
  rateTexts.set(rate, text);
  return text;
}

/** Reasons are cut to maxReasonBytes (at a character boundary), never refused. */
export function checkReason(reason: string): string {
  if (Buffer.byteLength(reason) > LIMITS.maxReasonBytes) {
    return Buffer.from(reason).subarray(0, LIMITS.maxReasonBytes).toString('utf8').replace(/\uFFFD+$/, '');
  }
  return reason;
}

export function checkItems(items: readonly string[]): void {
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (typeof item !== 'string') bad(`item ${i} is not a string`);
    // (A UTF-16 unit is at most 3 bytes of UTF-8: most items need no count.)
    if (item.length * 3 > LIMITS.maxItemBytes && Buffer.byteLength(item) > LIMITS.maxItemBytes) bad(`item ${i} is over ${LIMITS.maxItemBytes} bytes`, 'WEIR_ITEM_TOO_LARGE');
  }
}

/** Dedupe bit positions: one entry per item, each of the same length k; returns k (0 without dedupe). */
export function checkDedupe(dedupe: readonly (readonly number[])[] | undefined, items: number): number {
  if (!dedupe) return 0;
  if (dedupe.length !== items) bad(`dedupe has ${dedupe.length} entries for ${items} items`);
  const k = dedupe[0]?.length ?? 0;
  if (k < 1 || k > LIMITS.maxHashes) bad(`each dedupe entry must have 1..${LIMITS.maxHashes} bit positions`);
  for (const d of dedupe) {
    if (d.length !== k) bad('every dedupe entry must have the same number of bit positions');
    for (const p of d) if (!Number.isInteger(p) || p < 0) bad(`bit position ${p} is not a non-negative integer`);
  }
  return k;
}

/** A floor request as the script takes it: its source, and whole µs (rounded up: a floor is never shortened), 0 to 1/minRate s. */
export function checkFloor(floor: { source: unknown; ms: unknown }): [string, number] {
  const { source, ms } = floor;
  if (typeof source !== 'string' || source === '' || source === '*' || source.includes('\n') || Buffer.byteLength(source) > 2 * LIMITS.maxNameBytes) {
    bad(`floor source must be 1..${2 * LIMITS.maxNameBytes} bytes, no newline, not '*'`);
  }
  const most = 1e3 / LIMITS.minRate;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0 || ms > most) bad(`floor ms must be a number in [0, ${most}], got ${String(ms)}`);
  return [source, Math.ceil(ms * 1000)];
}

/** Each queue's [name, rate, maxInFlight] as setLimits' script takes them. */
export function checkLimits(limits: Record<string, { rate?: unknown; maxInFlight?: number | undefined } | undefined>): (string | number)[][] {
  const specs: (string | number)[][] = [];
  for (const [queue, limit] of Object.entries(limits)) {
    checkName('queue name', queue);
    const rate = checkRate(queue, limit?.rate);
    const cap = checkInt(`maxInFlight of queue ${queue}`, limit?.maxInFlight ?? 0, 0, LIMITS.maxInFlight);
    specs.push([queue, rate, cap]);
  }
  return specs;
}
