/**
 * Where a worker's CPU goes, by phase of a page's life: a V8 CPU profile
 * (`node --cpu-prof`) of the worker's main thread, each sample's function
 * put in a phase by its file (a native frame without one takes its
 * caller's). The profile samples the main thread only: the thread pool,
 * V8's helper threads and the kernel's own work beyond a system call are
 * not in it. Used by BENCH_CPU_PROFILE=1 of `BENCH_PART=cpu` (bench/cpu.ts).
 */
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { SourceMap } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Phases in the order they are tried: the first whose test a frame passes (its file, shortened, and its function name). */
const PHASES: [string, (file: string, fn: string) => boolean][] = [
  ['idle', (_f, fn) => fn === '(idle)'],
  ['garbage collection', (_f, fn) => fn === '(garbage collector)'],
  ['start-up: loading and compiling modules', (f, fn) => /modules\/|bootstrap\/realm|package_json|cjs-module-lexer/.test(f) || /^(compileFunction|internalModuleStat|readFileUtf8|wrapSafe|compileSourceTextModule)$/.test(fn)],
  ['parse: tokenizer, entities, link extraction', (f) => /Tokenizer\.js|decode\.js|decode_codepoint|links\/extract|links\/html-tree|fetch\/page-text|htmlparser2|entities/.test(f)],
  ['links: URL parsing, normalising, filtering, robots', (f) => /urls\/|links\/follow|node:internal\/url|robots\/|tldts/.test(f)],
  ['dedupe: Bloom filter positions', (f) => /bloom|hashing|dedupe\//.test(f)],
  ['Redis: client and queue API', (f) => /ioredis|redis-parser|cluster-key-slot|dist:queue\/|denque|standard-as-callback/.test(f)],
  ['archive: WARC records, digests, gzip', (f, fn) => /output\/warc|warcio|node:zlib|crypto\/hash|output\/spool/.test(f) || /^(digestRecord|processChunkSync)$/.test(fn)],
  ['file writes (archive and output)', (_f, fn) => /^(writeBuffer|writeBuffers)$/.test(fn)],
  ['output and logging', (f) => /output\/|pino|sonic-boom|fs\/promises|node:fs/.test(f)],
  ['socket writes (the system call: HTTP and Redis)', (_f, fn) => /^(writeLatin1String|writeUtf8String|writev)$/.test(fn)],
  ['HTTP: undici, sockets, streams, bodies', (f) => /undici|node:net|streams\/|stream_base|fetch\/|node:events|node:buffer|abort_controller|llhttp|wasm/.test(f)],
  ['crawl loop: lanes, pacing, counters', (f) => /dist:crawl\//.test(f)],
  ['timers, promises, microtasks', (f, fn) => /timers|task_queues|async_hooks|promise/.test(f) || /^(runMicrotasks|processTicksAndRejections|processImmediate|listOnTimeout|processTimers)$/.test(fn)],
];

/** A file shortened: a package's as nm:<package>/..., weir's own (built, or its source by a map) as dist:<folder>/... */
const shortFile = (url: string): string => (url.includes('node_modules/') ? url.replace(/.*node_modules\//, 'nm:') : url.replace(/.*\/(dist|src)\//, 'dist:'));

/** Source maps of the built command's bundle (dist/cli.js, dist/bin/*.js), by file URL; null when a file has none. */
const maps = new Map<string, SourceMap | null>();

/**
 * The file a frame's code came from. The weir command runs as one esbuild
 * bundle (scripts/bundle-cli.mjs): its frames name dist/bin/chunk-*.js, so
 * each is looked up in the chunk's source map (the module it was built
 * from: src/crawl/..., or a package under node_modules).
 */
function sourceOf(frame: CallFrame): string {
  const { url } = frame;
  if (!/\/dist\/(bin\/[^/]+|cli)\.js$/.test(url)) return shortFile(url);
  let map = maps.get(url);
  if (map === undefined) {
    try {
      map = new SourceMap(JSON.parse(readFileSync(`${fileURLToPath(url)}.map`, 'utf8')) as ConstructorParameters<typeof SourceMap>[0]);
    } catch {
      map = null;
    }
    maps.set(url, map);
  }
  const entry = map?.findEntry(frame.lineNumber, frame.columnNumber);
  return shortFile(entry && 'originalSource' in entry ? entry.originalSource : url);
}

/** ms of the profile's main thread in each phase (idle left out), busiest first. */
export function phasesOf(profile: CpuProfile): [string, number][] {
  const self = new Map<number, number>();
  profile.samples.forEach((s, i) => self.set(s, (self.get(s) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const parent = new Map<number, ProfileNode>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n);
  const ms = new Map<string, number>();
  for (const n of profile.nodes) {
    const t = (self.get(n.id) ?? 0) / 1000;
    if (t === 0) continue;
    let phase = PHASES.find(([, test]) => test(sourceOf(n.callFrame), n.callFrame.functionName))?.[0];
    for (let q = parent.get(n.id); !phase && q; q = parent.get(q.id)) {
      const file = sourceOf(q.callFrame);
      if (file) phase = PHASES.find(([, test]) => test(file, q?.callFrame.functionName ?? ''))?.[0];
    }
    phase ??= 'other';
    if (phase !== 'idle') ms.set(phase, (ms.get(phase) ?? 0) + t);
  }
  return [...ms].sort((a, b) => b[1] - a[1]);
}

/** The busiest profile in `dir` (a crawl writes one per process: the worker's is the busiest). */
export async function busiestProfile(dir: string): Promise<[string, number][]> {
  let best: [string, number][] = [];
  let most = -1;
  for (const name of (await readdir(dir)).filter((n) => n.endsWith('.cpuprofile'))) {
    const phases = phasesOf(JSON.parse(await readFile(join(dir, name), 'utf8')) as CpuProfile);
    const busy = phases.reduce((a, [, t]) => a + t, 0);
    if (busy > most) [best, most] = [phases, busy];
  }
  return best;
}
