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

function invokedDirectly(): boolean {
  try {
    return process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
  const [{ main }, { EXIT }] = await Promise.all([import('./cli/main.js'), import('./cli/exit.js')]);
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`weir: ${String(err)}\n`);
      process.exit(EXIT.failure);
    },
  );
}
