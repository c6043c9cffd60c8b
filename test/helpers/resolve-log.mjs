// Preloaded (node --import) to log what a process loads: see resolve-log-hooks.mjs.
import { register } from 'node:module';

register(new URL('./resolve-log-hooks.mjs', import.meta.url));
