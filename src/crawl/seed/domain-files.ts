import { LIMITS } from '../../queue/index.js';
import { parseDomainKey } from '../urls/index.js';
import type { Judged, LineJudge } from './line-files.js';
import type { SeedRate } from './seed.js';

/** One domain's limits, as a domain file gives them. */
export interface DomainRow {
  /** The domain key (queue name), as rateLimits keys are written (urls/domains.ts parseDomainKey). */
  key: string;
  rate: SeedRate;
  maxInFlight: number;
}

function rateText(t: string): SeedRate | null {
  if (t === 'unlimited') return 'unlimited';
  if (!/^\d+(\.\d+)?([eE][-+]?\d+)?$|^\.\d+$/.test(t)) return null;
  const r = Number(t);
  return Number.isFinite(r) && r >= 0.000001 && r <= LIMITS.maxRate ? r : null;
}

/**
 * A domain file's lines (seed domainFiles): `domain,rate[,maxInFlight]`,
 * the rate in requests per second (fractions allowed) or `unlimited`, the
 * in-flight cap `defaultMaxInFlight` (the seed's maxInFlightPerDomain) when
 * left out. A first line reading `domain,rate…` is a header and passed over.
 */
export function domainLineJudge(defaultMaxInFlight: number): LineJudge<DomainRow> {
  let first = true;
  return (lines) =>
    lines.map((line): Judged<DomainRow> => {
      const header = first && /^domain\s*,\s*rate\b/i.test(line);
      first = false;
      if (header) return null;
      const cells = line.split(',').map((c) => c.trim());
      if (cells.length < 2 || cells.length > 3) return { bad: `must be domain,rate or domain,rate,maxInFlight, got ${cells.length} field${cells.length === 1 ? '' : 's'}` };
      const key = parseDomainKey(cells[0] as string);
      if (typeof key === 'string') return { bad: `domain ${key}` };
      const rate = rateText(cells[1] as string);
      if (rate === null) return { bad: `rate must be requests per second (a number > 0, fractions allowed) or unlimited, got ${JSON.stringify((cells[1] as string).slice(0, 40))}` };
      let maxInFlight = defaultMaxInFlight;
      if (cells[2] !== undefined && cells[2] !== '') {
        maxInFlight = Number(cells[2]);
        if (!/^\d+$/.test(cells[2]) || maxInFlight < 1 || maxInFlight > 10_000) return { bad: `maxInFlight must be a whole number from 1 to 10000, got ${JSON.stringify(cells[2].slice(0, 40))}` };
      }
      return { value: { key: key.key, rate, maxInFlight } };
    });
}
