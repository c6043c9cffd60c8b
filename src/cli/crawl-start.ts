/**
 * `weir crawl` starts its worker processes before its kickoff, so that their
 * start-up (a Node process, the crawler's modules, a Redis connection: about
 * 0.3 s) overlaps the kickoff instead of following it. They wait for one
 * word on the IPC channel: `go` once the kickoff is done, `stop` when it
 * failed or found nothing to crawl. A worker must not start crawling
 * earlier: with --exit-when-done it would take a half-seeded arena for a
 * drained one and leave.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export type StartWord = 'go' | 'stop';

/** Set in a worker's environment by `weir crawl`: wait for the word before crawling. */
export const AWAIT_KICKOFF_ENV = 'WEIR_AWAIT_KICKOFF';

interface WordMessage {
  weir: StartWord;
}

/** This same `weir` command, with `args` and `env`, in a process of its own with an IPC channel (stdout and stderr shared). */
export function spawnWeir(args: readonly string[], env: NodeJS.ProcessEnv): ChildProcess {
  return spawn(process.execPath, [...process.execArgv, process.argv[1] as string, ...args], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env });
}

const wordOf = (m: unknown): StartWord | undefined => {
  const word = (m as Partial<WordMessage> | null)?.weir;
  return word === 'go' || word === 'stop' ? word : undefined;
};

/** Start words that came while holdStartWords held them, for startWord. */
const heldWords: StartWord[] = [];
let holder: ((m: unknown) => void) | undefined;

/**
 * Keeps the parent's start word until startWord listens (the spare worker,
 * spare-worker.ts, from before it listens for its run message). Node hands
 * a child the messages that came before its first 'message' listener all in
 * one go, to the listeners there are at that moment: when the kickoff was
 * quicker than the spare's start-up, the run message and the start word came
 * together, the spare stopped listening at the first, the word reached no
 * listener, and the spare (and its command, waiting for it) waited for ever.
 */
export function holdStartWords(): void {
  if (holder) return;
  holder = (m) => {
    const word = wordOf(m);
    if (word) heldWords.push(word);
  };
  process.on('message', holder);
}

/** Stops holding words (startWord listens itself from here); the first held, if any. */
function releaseHeldWord(): StartWord | undefined {
  if (holder) process.off('message', holder);
  holder = undefined;
  return heldWords.shift();
}

/** The parent's side: tells each child still connected, once. */
export function tellWorkers(children: readonly ChildProcess[], word: StartWord): void {
  const message: WordMessage = { weir: word };
  for (const c of children) if (c.connected) c.send(message, () => {});
}

/**
 * The worker's side: 'go' at once unless `weir crawl` started it to wait;
 * else the parent's word, or 'stop' if the parent went away or `signal`
 * aborted first. Once the word is in, the channel no longer keeps this
 * process alive.
 */
export function startWord(signal: AbortSignal): Promise<StartWord> {
  if (process.env[AWAIT_KICKOFF_ENV] !== '1' || !process.send) {
    releaseHeldWord();
    return Promise.resolve('go');
  }
  return new Promise((resolve) => {
    const done = (word: StartWord): void => {
      process.off('message', onMessage);
      process.off('disconnect', onGone);
      signal.removeEventListener('abort', onGone);
      // (Not disconnect(): inside a message's handler it throws in Node's own code.)
      process.channel?.unref();
      resolve(word);
    };
    const onMessage = (m: unknown): void => {
      const word = wordOf(m);
      if (word) done(word);
    };
    const onGone = (): void => done('stop');
    process.on('message', onMessage);
    process.once('disconnect', onGone);
    signal.addEventListener('abort', onGone, { once: true });
    // (Listening first, then the words held meanwhile: none can fall between.)
    const held = releaseHeldWord();
    if (held) done(held);
    else if (signal.aborted || !process.connected) onGone();
  });
}
