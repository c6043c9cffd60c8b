import type { RedisClient } from '../../queue/index.js';
import { RETRY_POLICY } from './classify.js';

/** Longest pause a message may ask for: the longest the crawler itself pauses a domain for (a stray message can't silence one for longer). */
const MAX_PAUSE_MS = RETRY_POLICY.maxRetryAfterSeconds * 1000;
/** Longest queue name a message may carry (the queue's own limit is lower). */
const MAX_QUEUE_CHARS = 1024;

/**
 * A Retry-After one worker met, told to every worker of the arena at once.
 *
 * The queue pauses the domain in Redis as the lease settles; but a request
 * another worker took ahead of its slot (PACING.aheadMs) before then would
 * still go at its slot. Each worker listens on the arena's channel (one
 * connection of its own) and its pacer holds such requests back
 * (SendPacer.notePause). Best effort: a message lost (a connection down)
 * leaves that one lease ahead to go, as before the channel.
 */
export class PauseBroadcast {
  private listener: RedisClient | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly channel: string,
    /** Called for each pause heard, this worker's own included. */
    private readonly heard: (queue: string, ms: number) => void,
  ) {}

  /** Subscribes; resolves once listening (ioredis subscribes again after a reconnect). */
  async listen(): Promise<void> {
    const listener = this.redis.duplicate();
    this.listener = listener;
    // (Errors are the main connection's to report: this one only listens.)
    listener.on('error', () => undefined);
    listener.on('message', (_channel: string, text: string) => {
      const pause = parsePause(text);
      if (pause) this.heard(pause.queue, pause.ms);
    });
    try {
      await listener.subscribe(this.channel);
    } catch (err) {
      // (Closed before it was listening: nothing to tell.)
      if (this.listener === listener) throw err;
    }
  }

  /** A response of `queue`'s domain asked for `ms` of pause: this worker holds back at once, the others as the message comes. */
  tell(queue: string, ms: number): void {
    this.heard(queue, ms);
    void this.redis.publish(this.channel, JSON.stringify({ queue, ms })).catch(() => undefined);
  }

  close(): void {
    this.listener?.disconnect();
    this.listener = undefined;
  }
}

/** A message's pause, or null for anything else on the channel (anyone with the arena's Redis could publish). */
export function parsePause(text: string): { queue: string; ms: number } | null {
  if (text.length > MAX_QUEUE_CHARS + 64) return null;
  try {
    const v = JSON.parse(text) as { queue?: unknown; ms?: unknown };
    if (typeof v.queue !== 'string' || v.queue.length === 0 || v.queue.length > MAX_QUEUE_CHARS) return null;
    if (typeof v.ms !== 'number' || !Number.isFinite(v.ms) || v.ms <= 0) return null;
    return { queue: v.queue, ms: Math.min(v.ms, MAX_PAUSE_MS) };
  } catch {
    return null;
  }
}
