/**
 * BENCH_PART=polite npm run bench:crawl — what waiting for rate slots costs
 * the crawler's CPU: the same 100-site synthetic web (bench/web.ts) crawled
 * by `weir crawl --workers 4` at 2 requests/s per site and with every site
 * unlimited, alternating, on one redis-server and on a 3-master Cluster.
 * CPU is user + system of the command and its worker processes, measured
 * from outside (bench/cpu.ts timed), per page fetched; the workers' own
 * summaries ('worker finished' log lines) give dequeue calls, empty ones and
 * leases handed back per page, and how often their threads slept and woke.
 * Beside them, alternating in the same run, the floor (bench/floor-crawl.mjs):
 * the same pages fetched and parsed by 4 processes of plain undici and
 * htmlparser2, no queue, at 2/s per site and unlimited: what spreading the
 * same work over time costs any Node crawler on this machine. BENCH_CPU_RUNS
 * runs of each (default 3), median shown. Target: polite ≤ 1.05× unlimited.
 * BENCH_POLITE_REPLIES=1 adds, alternating too, the 2/s crawl with its send
 * reports on the client's connection, replies read
 * (WEIR_REPLYLESS_REPORTS=0): what reports without replies save.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { oneNode, threeMasters, type Nodes } from './cluster-cost.js';
import { builtCli, CPU_RUNS, median, timed } from './cpu.js';
import { workerCounts } from '../test/helpers/worker-logs.js';
import { isPageServed, manyDomainSeed, startManyDomainWeb } from './web.js';

type Out = (name: string, value: string, note?: string) => void;

const SITES = 100;
const FLOOR = fileURLToPath(new URL('./floor-crawl.mjs', import.meta.url));

interface PoliteRun {
  cpuMs: number;
  wallMs: number;
  pages: number;
  dequeues: number;
  empty: number;
  released: number;
  sleeps: number;
}

export async function politeCpuBenchmarks(out: Out, dir: string): Promise<void> {
  const cli = builtCli();
  // BENCH_POLITE_NODES=one or cluster: only that one.
  const only = process.env.BENCH_POLITE_NODES ?? '';
  for (const make of [oneNode, threeMasters].filter((m) => only === '' || (only === 'one') === (m === oneNode))) {
    const nodes: Nodes = await make();
    const web = await startManyDomainWeb(SITES);
    let n = 0;
    const crawl = async (rate: string, env: Record<string, string> = {}): Promise<PoliteRun> => {
      // A fresh arena per run: nothing of the last one is found again.
      const arena = `polite${n++}`;
      const seedPath = join(dir, `${arena}.yaml`);
      await writeFile(seedPath, manyDomainSeed(web, rate, arena));
      web.reset();
      const logPath = join(dir, `${arena}.log`);
      const r = await timed(process.execPath, [cli, 'crawl', seedPath, '--workers', '4', '--redis', nodes.url], { WEIR_LOG_LEVEL: 'info', WEIR_LOG_FORMAT: 'json', WEIR_BENCH_ERR: logPath, ...env });
      if (r.code !== 0) throw new Error(`weir crawl exited ${r.code} (log: ${logPath})`);
      const pages = web.log.filter(isPageServed).length;
      const { dequeues, empty, released, sleeps } = workerCounts(await readFile(logPath, 'utf8'));
      return { cpuMs: r.cpuMs, wallMs: r.wallMs, pages, dequeues, empty, released, sleeps };
    };
    // The floor: the same pages, 4 processes, no queue (its 2/s keeps weir's 25 ms margin).
    const floor = async (rate: number): Promise<{ cpuMs: number; pages: number }> => {
      web.reset();
      const r = await timed(process.execPath, [FLOOR, String(rate), '4', ...web.origins], { WEIR_BENCH_ERR: join(dir, 'floor.err') });
      if (r.code !== 0) throw new Error(`the floor crawl exited ${r.code} (log: ${join(dir, 'floor.err')})`);
      return { cpuMs: r.cpuMs, pages: web.log.filter(isPageServed).length };
    };
    const replies = process.env.BENCH_POLITE_REPLIES === '1';
    const runs: Record<'2/s' | 'unlimited' | '2/s, replies read', PoliteRun[]> = { '2/s': [], unlimited: [], '2/s, replies read': [] };
    const floors: Record<'2/s' | 'unlimited', number[]> = { '2/s': [], unlimited: [] };
    try {
      for (let i = 0; i < CPU_RUNS; i++) {
        runs['2/s'].push(await crawl('2'));
        runs.unlimited.push(await crawl('unlimited'));
        if (replies) runs['2/s, replies read'].push(await crawl('2', { WEIR_REPLYLESS_REPORTS: '0' }));
        // (With the one-node runs only: the floor has no Redis.)
        if (make !== oneNode) continue;
        for (const [label, rate] of [['2/s', 2], ['unlimited', 0]] as const) {
          const f = await floor(rate);
          floors[label].push(f.cpuMs / f.pages);
        }
      }
    } finally {
      await web.close();
      await nodes.close();
    }
    const perPage = (rs: PoliteRun[]): number => median(rs.map((r) => r.cpuMs / r.pages));
    for (const [label, rs] of Object.entries(runs).filter(([, rs]) => rs.length > 0)) {
      const per = (f: (r: PoliteRun) => number): string => median(rs.map((r) => f(r) / r.pages)).toFixed(2);
      out(`polite: ${nodes.label}, 100 sites ${label}: CPU per page (ms)`, perPage(rs).toFixed(2), `median of ${rs.length}: ${rs.map((r) => (r.cpuMs / r.pages).toFixed(2)).join(', ')}; ${rs[0]?.pages} pages in ${median(rs.map((r) => r.wallMs / 1000)).toFixed(1)} s; per page ${per((r) => r.dequeues)} dequeue calls, ${per((r) => r.empty)} empty, ${per((r) => r.released)} handed back, ${per((r) => r.sleeps)} sleeps`);
    }
    const ratio = perPage(runs['2/s']) / perPage(runs.unlimited);
    out(`polite: ${nodes.label}, 2/s / unlimited CPU per page`, ratio.toFixed(2), 'target ≤ 1.05');
    if (floors['2/s'].length === 0) continue;
    for (const [label, xs] of Object.entries(floors)) out(`polite: the floor (no queue), 100 sites ${label}: CPU per page (ms)`, median(xs).toFixed(2), `median of ${xs.length}: ${xs.map((x) => x.toFixed(2)).join(', ')}`);
    const floorRatio = median(floors['2/s']) / median(floors.unlimited);
    out('polite: the floor, 2/s / unlimited CPU per page', floorRatio.toFixed(2), `weir's ratio / the floor's: ${(ratio / floorRatio).toFixed(2)}; extra ms a page at 2/s: weir ${(perPage(runs['2/s']) - perPage(runs.unlimited)).toFixed(2)}, the floor ${(median(floors['2/s']) - median(floors.unlimited)).toFixed(2)}`);
  }
}
