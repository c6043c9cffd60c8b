#!/usr/bin/env node
/** The `weir` command's entry point (package.json "bin"): see src/cli/main.ts. */
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { EXIT } from './cli/exit.js';
import { main } from './cli/main.js';

export { EXIT, main };

function invokedDirectly(): boolean {
  try {
    return process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`weir: ${String(err)}\n`);
      process.exit(EXIT.failure);
    },
  );
}
