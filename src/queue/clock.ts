/**
 * Maps Redis's clock onto this process's performance.now(). Each call that
 * returns Redis's time gives a sample: Redis read its clock somewhere
 * between send and reply, so offset = redisMs - (sent + received) / 2 is
 * right to within half the round trip. A round trip stretched by a busy
 * event loop gives a poor sample, so the estimate keeps the sample with the
 * shortest round trip, renewed every few seconds (clocks drift slowly).
 * Only used to act at a fixed offset from a slot Redis decided; never to decide one.
 */
export class RedisClock {
  private offset: number | null = null;
  private bestRtt = Infinity;
  private bestAt = 0;

  /** Ms a sample stays the best before any newer one may replace it. */
  static readonly renewMs = 5000;

  sample(redisMs: number, sentAt: number, receivedAt: number): void {
    if (!Number.isFinite(redisMs) || redisMs <= 0) return;
    const rtt = receivedAt - sentAt;
    if (this.offset === null || rtt <= this.bestRtt || receivedAt - this.bestAt > RedisClock.renewMs) {
      this.offset = redisMs - (sentAt + receivedAt) / 2;
      this.bestRtt = rtt;
      this.bestAt = receivedAt;
    }
  }

  /** A Redis time (ms since the epoch) on the performance.now() clock. */
  toLocal(redisMs: number): number {
    return this.offset === null ? performance.now() : redisMs - this.offset;
  }

  /** A performance.now() time on Redis's clock (ms since the epoch). */
  toRedis(localMs: number): number {
    return this.offset === null ? Date.now() : localMs + this.offset;
  }

  /** Half the round trip of the sample in use: the estimate's error bound, ms. */
  get uncertaintyMs(): number {
    return Number.isFinite(this.bestRtt) ? this.bestRtt / 2 : 0;
  }
}
