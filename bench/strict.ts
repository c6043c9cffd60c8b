/**
 * The strict-server benchmark of bench:crawl (BENCH_PART=strict): webs of
 * sites each behind a real nginx `limit_req` at exactly the rate weir is
 * given, no burst (test/helpers/strict-crawl.ts). nginx refuses (429) any
 * request that arrives sooner than 1/R after the last one it let through,
 * so its refusals count every short gap as the site sees it. Reports, per
 * scenario: requests refused (target 0), sites with a refusal, the smallest
 * gap by nginx's stamps against 1/R, pacing efficiency of the busiest site,
 * pages fetched and wall time.
 *
 * Knobs: STRICT_SCENARIO (a substring of the scenario names), STRICT_SITES
 * (default 100), STRICT_CAP_S (default 150: a crawl still running then is
 * stopped and judged as it stands), STRICT_DETAIL=1 (each refusal on stderr).
 */
import { refusals, strictCrawl, type StrictCrawl } from '../test/helpers/strict-crawl.js';

type Out = (name: string, value: string, note?: string) => void;

const SITES = Number(process.env.STRICT_SITES ?? 100);
const ONLY = process.env.STRICT_SCENARIO ?? '';
const CAP_MS = Number(process.env.STRICT_CAP_S ?? 150) * 1000;

export async function strictBenchmarks(out: Out, dir: string): Promise<void> {
  const web = { sites: SITES, rate: 2, pages: 33, workers: 4, concurrency: 32, capMs: CAP_MS, dir };
  const scenarios: (StrictCrawl & { name: string })[] = [
    { name: `${SITES} sites at 2/s, 4 workers, one Redis`, ...web },
    { name: `${SITES} sites at 2/s, 4 workers, 3-master Cluster`, ...web, cluster: true },
    { name: `${SITES} sites at 2/s, 4 workers, a CPU hog`, ...web, hog: true },
    { name: `${SITES} sites at 2/s, 4 workers, one SIGKILLed at 8 s`, ...web, killAtMs: 8000 },
    { name: '5 sites at 20/s, 4 workers', ...web, sites: 5, rate: 20, pages: 300, concurrency: 16 },
  ];
  for (const s of scenarios.filter((x) => x.name.includes(ONLY))) {
    const r = await strictCrawl(s);
    if (process.env.STRICT_DETAIL) for (const line of refusals(r)) process.stderr.write(`refused ${line}\n`);
    const refused = r.refused.reduce((a, b) => a + b, 0);
    const gaps = r.smallestGap.filter(Number.isFinite).sort((a, b) => a - b);
    out(
      `strict nginx: ${s.name}: refused`,
      String(refused),
      `of ${r.arrivals.length} requests, ${r.refused.filter((n) => n > 0).length} sites with a refusal; smallest gap ${gaps[0]} ms, median site ${gaps[Math.floor(gaps.length / 2)]} ms (1/R ${(1000 / s.rate).toFixed(1)}); busiest site's efficiency ${r.efficiency.toFixed(3)}; ${r.pages}/${r.expectedPages} pages; wall ${(r.wallMs / 1000).toFixed(1)} s`,
    );
  }
}
