#!/usr/bin/env node
/**
 * The `weir` command's entry point (package.json "bin"): see src/cli/main.ts.
 * Built, this file is the entry of one esbuild bundle (scripts/bundle-cli.mjs)
 * and everything else is loaded from its chunks in dist/bin/, so main is
 * imported, not re-exported: code that finds lua/ or web/ from its own URL
 * must sit two folders below the package's root, as it does in src/.
 */
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { SPARE_ENV, spareWorkerArgv, startSpareWorker } from './cli/spare-worker.js';

function invokedDirectly(): boolean {
  try {
    return process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
}

async function run(argv: string[]): Promise<void> {
  const [{ main }, { EXIT }] = await Promise.all([import('./cli/main.js'), import('./cli/exit.js')]);
  main(argv).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`weir: ${String(err)}\n`);
      process.exit(EXIT.failure);
    },
  );
}

if (invokedDirectly()) {
  if (process.env[SPARE_ENV] === '1') {
    // `weir crawl`'s spare worker (cli/spare-worker.ts): load the worker's modules while the parent reads its seed.
    const warm = Promise.all([import('./cli/main.js'), import('./cli/worker.js')]).catch(() => {});
    const argv = await spareWorkerArgv();
    if (argv === undefined) process.exit(0);
    await warm;
    await run(argv);
  } else {
    startSpareWorker(process.argv.slice(2));
    await run(process.argv.slice(2));
  }
}
