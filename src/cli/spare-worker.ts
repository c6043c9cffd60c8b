/**
 * `weir crawl`'s first worker process is started at the command's entry,
 * before the command has loaded its own modules, read the seed or found its
 * Redis (about 0.2 s on two cores). It knows nothing yet: it loads the
 * worker's modules and waits for one message with its arguments and
 * environment, then runs as `weir worker` would. A crawl needs at least one
 * worker, so the spare is never wasted when the crawl starts; when the
 * command fails before its workers are needed, its exit closes the channel
 * and the spare leaves without touching Redis. A worker process takes some
 * 0.4 s to load before its first request, longer than the kickoff: the
 * start of a crawl is its first worker's start-up (docs/benchmarks.md,
 * "Starting faster").
 */
import type { ChildProcess } from 'node:child_process';
import { holdStartWords, spawnWeir } from './crawl-start.js';

/** Set in the spare's environment: wait for a `run` message instead of reading argv. */
export const SPARE_ENV = 'WEIR_SPARE_WORKER';

interface RunMessage {
  weirSpare: 'run';
  argv: string[];
  env: Record<string, string | undefined>;
}

let spare: ChildProcess | undefined;

/**
 * The parent's side, at the entry: starts the spare when the command line is
 * `weir crawl …` (the command first, as documented), else does nothing.
 */
export function startSpareWorker(argv: readonly string[]): void {
  if (argv[0] !== 'crawl' || process.env[SPARE_ENV] !== undefined) return;
  const child = spawnWeir([], { ...process.env, [SPARE_ENV]: '1' });
  child.on('error', () => {}); // (A spare that failed to start is not used: takeSpareWorker checks.)
  // Not waited for: if the command ends without using it, the spare sees the channel close and leaves.
  child.unref();
  child.channel?.unref();
  spare = child;
}

/**
 * The spare, given its arguments and environment (the parent's, plus what the
 * worker needs), or undefined when there is none or it is gone. Taken once.
 */
export function takeSpareWorker(argv: string[], env: NodeJS.ProcessEnv): ChildProcess | undefined {
  const child = spare;
  spare = undefined;
  if (!child || !child.connected || child.exitCode !== null || child.signalCode !== null) return undefined;
  const message: RunMessage = { weirSpare: 'run', argv, env };
  child.send(message, () => {});
  // From here it is a worker like the others: the command waits for it.
  child.ref();
  child.channel?.ref();
  return child;
}

/**
 * The spare's side: its command line and environment once the parent sends
 * them, or undefined when the parent is gone (it ended without workers). The
 * environment is applied here, before the command runs.
 */
export function spareWorkerArgv(): Promise<string[] | undefined> {
  return new Promise((resolve) => {
    const done = (argv: string[] | undefined): void => {
      process.off('message', onMessage);
      process.off('disconnect', onGone);
      resolve(argv);
    };
    const onMessage = (m: unknown): void => {
      const msg = m as Partial<RunMessage> | null;
      if (msg?.weirSpare !== 'run' || !Array.isArray(msg.argv) || typeof msg.env !== 'object') return;
      const { argv, env } = msg as RunMessage;
      for (const [k, v] of Object.entries(env)) if (v !== undefined) process.env[k] = v;
      delete process.env[SPARE_ENV];
      done(argv);
    };
    const onGone = (): void => done(undefined);
    // The start word may come with the run message, before the worker listens for it: held for startWord.
    holdStartWords();
    process.on('message', onMessage);
    process.once('disconnect', onGone);
    if (!process.connected) onGone();
  });
}
