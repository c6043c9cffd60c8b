/**
 * Maps Redis's clock onto this process's performance.now(). Each call that
 * returns Redis's time gives a sample: Redis read its clock somewhere
 * between send and reply, so offset = redisMs - (sent + received) / 2 is
 * right to within half the round trip. A round trip stretched by a busy
 * event loop gives a poor sample, so the estimate is the sample with the
 * shortest round trip among those of the last `windowMs` (a minimum filter,
 * as NTP's): one slow reply never replaces a good recent one, and the
 * estimate still follows a drifting clock.
 * Only used to act at a fixed offset from a slot Redis decided; never to decide one.
 */
export class RedisClock {
  /** Recent samples, oldest first: at most maxSamples, none older than windowMs but the newest. */
  private samples: { offset: number; rtt: number; at: number }[] = [];
  private best: { offset: number; rtt: number; at: number } | null = null;

  /** How long a sample may stand as the best. */
  static readonly windowMs = 10_000;
  static readonly maxSamples = 64;

  sample(redisMs: number, sentAt: number, receivedAt: number): void {
    if (!Number.isFinite(redisMs) || redisMs <= 0) return;
    const s = { offset: redisMs - (sentAt + receivedAt) / 2, rtt: receivedAt - sentAt, at: receivedAt };
    this.samples.push(s);
    const oldest = receivedAt - RedisClock.windowMs;
    while (this.samples.length > RedisClock.maxSamples || (this.samples.length > 1 && (this.samples[0] as typeof s).at < oldest)) this.samples.shift();
    if (this.best === null || s.rtt <= this.best.rtt || this.best.at < oldest) {
      this.best = this.samples.reduce((a, b) => (b.rtt <= a.rtt ? b : a));
    }
  }

  /** A Redis time (ms since the epoch) on the performance.now() clock. */
  toLocal(redisMs: number): number {
    return this.best === null ? performance.now() : redisMs - this.best.offset;
  }

  /** A performance.now() time on Redis's clock (ms since the epoch). */
  toRedis(localMs: number): number {
    return this.best === null ? Date.now() : localMs + this.best.offset;
  }

  /** Half the round trip of the sample in use: the estimate's error bound, ms. */
  get uncertaintyMs(): number {
    return this.best ? this.best.rtt / 2 : 0;
  }
}

/**
 * Each shard's clock (a lease's slot is mapped by its own shard's: a
 * Cluster's masters may keep different time), and one fed by every shard,
 * for stamps that need no more (history buckets, a spare's age).
 */
export class ShardClocks {
  readonly any = new RedisClock();
  private readonly byTag = new Map<string, RedisClock>();

  of(tag: string): RedisClock {
    let c = this.byTag.get(tag);
    if (!c) {
      c = new RedisClock();
      this.byTag.set(tag, c);
    }
    return c;
  }

  /** A reply's clock from shard `tag` (see RedisClock.sample); that shard's clock. */
  sample(tag: string, redisMs: number, sentAt: number, receivedAt: number): RedisClock {
    this.any.sample(redisMs, sentAt, receivedAt);
    const c = this.of(tag);
    c.sample(redisMs, sentAt, receivedAt);
    return c;
  }
}
