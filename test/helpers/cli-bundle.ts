/**
 * The weir command bundled into one JavaScript file (esbuild), for tests that
 * start many worker processes: a process started from it costs ~0.6 s of CPU
 * where `--import tsx` costs ~1.5 s compiling TypeScript, and on two cores
 * that CPU is taken from the servers that judge politeness. It lives under
 * .weir/ (ignored) two levels below the repository, so the scripts' path to
 * lua/ and the packages in node_modules resolve as from src/.
 */
import { rmSync } from 'node:fs';
import { buildSync } from 'esbuild';

const ROOT = new URL('../../', import.meta.url).pathname;
let built: string | undefined;

export function cliBundle(): string {
  if (built) return built;
  const out = `${ROOT}.weir/test-build/cli-${process.pid}.mjs`;
  buildSync({ entryPoints: [`${ROOT}src/cli.ts`], bundle: true, platform: 'node', format: 'esm', outfile: out, packages: 'external', logLevel: 'error' });
  process.once('exit', () => rmSync(out, { force: true }));
  built = out;
  return out;
}
