/**
 * BENCH_PART=cpu npm run bench:crawl — what a page costs the crawler's own
 * CPU, side by side in one run on one origin of the corpus (python3-doc,
 * `unlimited`): weir (`weir crawl`: the command, kickoff and its worker
 * processes), wget -r, Crawlee's CheerioCrawler, and a floor: the least a
 * crawler in Node does (bench/floor-crawl.mjs). CPU is user + system of
 * the command and every child it waited for, measured from outside (bash's
 * `times`), not the corpus server's and not Redis's. weir runs as users run
 * it: `dist/cli.js`, built here first (`npm run build`), so each process
 * loads only what its command needs. Each crawler runs BENCH_CPU_RUNS times
 * (default 3), alternating; the median is shown. BENCH_CPU_CRAWLERS (names,
 * comma-separated) runs only those. BENCH_CPU_PROFILE=1 adds a run of weir
 * and weir --warc under V8's profiler: the worker's time per page by phase
 * (bench/phases.ts).
 */
import { execFileSync, spawn } from 'node:child_process';
import { readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startRedis } from '../test/helpers/redis.js';
import { serveCorpus } from './corpus.js';
import { busiestProfile } from './phases.js';

type Out = (name: string, value: string, note?: string) => void;

const ROOT = new URL('../', import.meta.url).pathname;
/** Runs of each crawler (BENCH_CPU_RUNS, default 3); bench/polite-cpu.ts takes the same. */
export const CPU_RUNS = Number(process.env.BENCH_CPU_RUNS ?? 3);

/** `npm run build`, then the built command: weir as users run it, each process loading what its command needs. */
export function builtCli(): string {
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
  return join(ROOT, 'dist/cli.js');
}

export interface CpuRun {
  cpuMs: number;
  pages: number;
  wallMs: number;
}

/** Runs `cmd args` under bash and reads its children's user + system time from `times`. */
export function timed(cmd: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number; cpuMs: number; wallMs: number; stderr: string }> {
  const quoted = [cmd, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  return new Promise((resolve) => {
    const t0 = performance.now();
    const p = spawn('bash', ['-c', `${quoted} >/dev/null 2>"$WEIR_BENCH_ERR"; code=$?; times; exit $code`], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.on('exit', (code) => {
      // `times`: the shell's own user and system time, then its children's ("0m1.234s 0m0.056s").
      const children = stdout.trim().split('\n').at(-1) ?? '';
      const secs = [...children.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60 + Number(m[2]));
      resolve({ code: code ?? 1, cpuMs: secs.reduce((a, b) => a + b, 0) * 1000, wallMs: performance.now() - t0, stderr: '' });
    });
  });
}

export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

export async function cpuBenchmarks(out: Out, dir: string, root: string): Promise<void> {
  const site = await serveCorpus(root, 1);
  const redisServer = await startRedis();
  const origin = site.origins[0] as string;
  const seedPath = join(dir, 'cpu.yaml');
  await writeFile(seedPath, ['arena: cpu', 'rateLimits:', `  "${site.keys[0]}": unlimited`, 'start:', `  - ${origin}/index.html`, 'allowPrivateNetworks: true', 'maxInFlightPerDomain: 8', ''].join('\n'));
  const cli = builtCli();
  const pages = (): number => site.log.filter((r) => r.status === 200 && r.path.endsWith('.html')).length;
  const err = join(dir, 'stderr.log');
  const weir = async (flags: string[], nodeFlags: string[] = []): Promise<CpuRun> => {
    await redisServer.client().flushall();
    site.reset();
    const r = await timed(process.execPath, [...nodeFlags, cli, 'crawl', seedPath, ...flags, '--redis', redisServer.url], { WEIR_LOG_LEVEL: 'warn', WEIR_BENCH_ERR: err });
    if (r.code !== 0) throw new Error(`weir crawl exited ${r.code}`);
    return { cpuMs: r.cpuMs, pages: pages(), wallMs: r.wallMs };
  };
  /** `wget -r` of the corpus into an emptied directory, with `extra` flags. */
  const wget = async (extra: string[]): Promise<CpuRun> => {
    site.reset();
    const target = join(dir, 'wget');
    await rm(target, { recursive: true, force: true });
    const r = await timed('wget', ['-r', '-l', 'inf', '-np', '-nv', '--no-host-directories', '--ignore-tags=img,link,script,style', '-P', target, ...extra, `${origin}/index.html`], { WEIR_BENCH_ERR: err });
    return { cpuMs: r.cpuMs, pages: pages(), wallMs: r.wallMs };
  };
  const crawlers: Record<string, () => Promise<CpuRun>> = {
    // As a user runs it: `weir crawl SEED` (one origin, 8 in flight: one worker process of 16 lanes).
    weir: () => weir([]),
    // Two worker processes forced, 8 lanes each (the first figure).
    'weir --workers 2': () => weir(['--workers', '2', '--concurrency', '8']),
    // Keeping every exchange in WARC files.
    'weir --warc': async () => {
      await rm(join(dir, 'warc'), { recursive: true, force: true });
      return weir(['--warc', join(dir, 'warc')]);
    },
    wget: () => wget([]),
    // wget keeping its exchanges in a WARC file (gzip per record, SHA-1 digests): what archiving costs a crawler in C.
    'wget --warc-file': async () => {
      await rm(join(dir, 'wget-warc.warc.gz'), { force: true });
      return wget(['--warc-file', join(dir, 'wget-warc')]);
    },
    // The floor of a crawler in Node (bench/floor-crawl.mjs): undici and htmlparser2, 8 in flight, no queue, no Redis, no dedupe filter, no output; one process (FLOOR_CHILD: it crawls, no parent spawning it).
    floor: async () => {
      site.reset();
      const r = await timed(process.execPath, [join(ROOT, 'bench/floor-crawl.mjs'), '0', '1', origin], { FLOOR_CHILD: '1', FLOOR_IN_FLIGHT: '8', FLOOR_START: '/index.html', WEIR_BENCH_ERR: err });
      if (r.code !== 0) throw new Error(`the floor crawler exited ${r.code}`);
      return { cpuMs: r.cpuMs, pages: pages(), wallMs: r.wallMs };
    },
    // The floor keeping every exchange in a WARC file as weir writes them (level-1 gzip members, SHA-1 digests), and nothing else: what archiving costs a crawler in Node at least.
    'floor --warc': async () => {
      site.reset();
      await rm(join(dir, 'floor-warc'), { recursive: true, force: true });
      const r = await timed(process.execPath, [join(ROOT, 'bench/floor-crawl.mjs'), '0', '1', origin], { FLOOR_CHILD: '1', FLOOR_IN_FLIGHT: '8', FLOOR_START: '/index.html', FLOOR_WARC: join(dir, 'floor-warc'), WEIR_BENCH_ERR: err });
      if (r.code !== 0) throw new Error(`the floor crawler exited ${r.code}`);
      return { cpuMs: r.cpuMs, pages: pages(), wallMs: r.wallMs };
    },
    crawlee: async () => {
      site.reset();
      const r = await timed(process.execPath, [join(ROOT, 'bench/crawlee-run.mjs'), `${origin}/index.html`], { BENCH_CONCURRENCY: '8', CRAWLEE_STORAGE_DIR: join(dir, 'crawlee'), WEIR_BENCH_ERR: err });
      return { cpuMs: r.cpuMs, pages: pages(), wallMs: r.wallMs };
    },
  };
  // BENCH_CPU_CRAWLERS=weir,weir --warc: only those (comma-separated names).
  const only = process.env.BENCH_CPU_CRAWLERS?.split(',').map((s) => s.trim());
  if (only) for (const name of Object.keys(crawlers)) if (!only.includes(name)) delete crawlers[name];
  const results: Record<string, CpuRun[]> = Object.fromEntries(Object.keys(crawlers).map((k) => [k, []]));
  for (let i = 0; i < CPU_RUNS; i++) for (const [name, run] of Object.entries(crawlers)) results[name]?.push(await run());
  const perPage = (name: string): number => median((results[name] ?? []).map((r) => r.cpuMs / r.pages));
  for (const name of Object.keys(crawlers)) {
    const rs = results[name] ?? [];
    out(`cpu: ${name}: CPU per page (ms)`, perPage(name).toFixed(2), `median of ${rs.length}: ${rs.map((r) => (r.cpuMs / r.pages).toFixed(2)).join(', ')}; ${rs[0]?.pages} pages; ${median(rs.map((r) => r.pages / (r.wallMs / 1000))).toFixed(1)} pages/s (wall)`);
  }
  const ran = (...names: string[]): boolean => names.every((n) => (results[n]?.length ?? 0) > 0);
  if (ran('weir', 'wget', 'weir --workers 2')) out('cpu: weir / wget CPU per page', (perPage('weir') / perPage('wget')).toFixed(2), `target ≤ 1.5; with --workers 2: ${(perPage('weir --workers 2') / perPage('wget')).toFixed(2)}`);
  const rate = (name: string): number => median((results[name] ?? []).map((r) => r.pages / (r.wallMs / 1000)));
  if (ran('weir', 'weir --warc')) out('cpu: weir --warc / weir pages/s (wall)', (rate('weir --warc') / rate('weir')).toFixed(2), `target ≥ 0.85; CPU per page ${(perPage('weir --warc') / perPage('weir')).toFixed(2)}×`);
  // Archiving's floor: the same ratio for a crawler that does nothing else (bench/floor-crawl.mjs FLOOR_WARC), and weir's against it.
  if (ran('floor', 'floor --warc')) out('cpu: floor --warc / floor pages/s (wall)', (rate('floor --warc') / rate('floor')).toFixed(2), `CPU per page ${(perPage('floor --warc') / perPage('floor')).toFixed(2)}×, ${(perPage('floor --warc') - perPage('floor')).toFixed(2)} ms more a page (weir: ${(perPage('weir --warc') - perPage('weir')).toFixed(2)})`);
  if (ran('weir', 'weir --warc', 'floor', 'floor --warc')) out("cpu: weir's --warc ratio / the floor's", (rate('weir --warc') / rate('weir') / (rate('floor --warc') / rate('floor'))).toFixed(2), 'what weir keeps of its speed archiving, against what a crawler doing nothing else keeps');
  // (What the last run of each left: weir gzips at level 1, wget at zlib's default, 6.)
  const bytesPerPage = async (name: string, path: string): Promise<string> => {
    const files = (await stat(path)).isDirectory() ? (await readdir(path)).map((f) => join(path, f)) : [path];
    const bytes = (await Promise.all(files.map(async (f) => (await stat(f)).size))).reduce((a, b) => a + b, 0);
    return `${((bytes / (results[name]?.at(-1)?.pages ?? 1)) / 1000).toFixed(1)} kB of WARC a page`;
  };
  if (ran('weir', 'weir --warc')) out('cpu: weir --warc: archive size', await bytesPerPage('weir --warc', join(dir, 'warc')), 'gzip level 1, every record its own member; robots.txt included');
  if (ran('wget --warc-file')) out('cpu: wget --warc-file: archive size', await bytesPerPage('wget --warc-file', join(dir, 'wget-warc.warc.gz')), 'gzip level 6 (zlib default), every record its own member');
  if (ran('wget', 'wget --warc-file')) out('cpu: wget --warc-file / wget pages/s (wall)', (rate('wget --warc-file') / rate('wget')).toFixed(2), `the same for wget; CPU per page ${(perPage('wget --warc-file') / perPage('wget')).toFixed(2)}×`);
  // Speed against wget is bound by what any crawler in Node costs on these two cores: the floor's speed beside wget's, and weir's beside the floor's.
  if (ran('floor', 'wget')) out('cpu: floor / wget pages/s (wall)', (rate('floor') / rate('wget')).toFixed(2), `a crawler in Node with nothing but fetch and parse; CPU per page ${(perPage('floor') / perPage('wget')).toFixed(2)}×`);
  if (ran('weir', 'floor')) out('cpu: weir / floor pages/s (wall)', (rate('weir') / rate('floor')).toFixed(2), `CPU per page ${(perPage('weir') / perPage('floor')).toFixed(2)}×`);
  if (ran('weir', 'crawlee')) out('cpu: weir / Crawlee CPU per page', (perPage('weir') / perPage('crawlee')).toFixed(2), 'target ≤ 0.5');
  if (process.env.BENCH_CPU_PROFILE) {
    // One more run each under V8's profiler (every process of the crawl: the
    // worker's profile is the busiest), by phase, per page.
    for (const [name, flags] of [['weir', []], ['weir --warc', ['--warc', join(dir, 'warc')]]] as const) {
      const profiles = join(dir, `profile-${name.replace(/\W+/g, '-')}`);
      await rm(join(dir, 'warc'), { recursive: true, force: true });
      const run = await weir([...flags], ['--cpu-prof', `--cpu-prof-dir=${profiles}`, '--cpu-prof-interval', '200']);
      const phases = await busiestProfile(profiles);
      const busy = phases.reduce((a, [, t]) => a + t, 0);
      out(`profile: ${name}: worker's main thread per page (ms)`, (busy / run.pages).toFixed(2), `${run.pages} pages, sampled every 200 µs (the profiler's own cost included)`);
      for (const [phase, ms] of phases) out(`profile: ${name}: ${phase}`, (ms / run.pages).toFixed(2), `${((ms / busy) * 100).toFixed(0)} %`);
    }
  }
  await redisServer.destroy();
  await site.close();
}
