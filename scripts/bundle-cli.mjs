/**
 * `npm run build`'s second step: the `weir` command as one esbuild bundle,
 * its packages included. Loading the command from some 400 files (lodash
 * alone 130, through bloom-filters) cost every process 0.1–0.15 s of start-up
 * in module resolution and CommonJS lexing; `weir crawl` pays it in its own
 * process and in each worker's (docs/benchmarks.md, "Cost per page").
 * dist/cli.js is the entry, dist/bin/ the chunks each command imports when it
 * runs. The library (dist/index.js) stays tsc's output, one file a module.
 */
import { rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { build } from 'esbuild';

const ROOT = new URL('../', import.meta.url).pathname;

rmSync(`${ROOT}dist/bin`, { recursive: true, force: true });
const result = await build({
  absWorkingDir: ROOT,
  entryPoints: { cli: 'src/cli.ts' },
  outdir: 'dist',
  chunkNames: 'bin/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  metafile: true,
  logLevel: 'warning',
  // Bundled CommonJS packages call require() for Node's own modules.
  banner: { js: "import { createRequire as __weirRequire } from 'node:module'; const require = __weirRequire(import.meta.url);" },
});

// Code that finds lua/, web/ or seeds/ from its own URL counts two folders up
// (src/queue/scripts.ts: '../../lua/'): it must land in dist/bin/, not in the entry.
for (const [out, { inputs }] of Object.entries(result.metafile.outputs)) {
  if (out.startsWith('dist/bin/') || out.endsWith('.map')) continue;
  for (const input of Object.keys(inputs)) {
    if (input === 'src/cli.ts' || input.includes('node_modules/')) continue;
    if ((await readFile(`${ROOT}${input}`, 'utf8')).includes('import.meta.url')) {
      throw new Error(`${input} uses import.meta.url but was bundled into ${out}, one folder shallower than src/: import it dynamically from src/cli.ts`);
    }
  }
}
