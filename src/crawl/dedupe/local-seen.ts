// The two modules used, not the package's index: that loads all its filters
// and lodash with them (some 150 files, 30 ms of every worker's start-up).
import bloomFilterModule from 'bloom-filters/dist/bloom/bloom-filter.js';
import hashingModule from 'bloom-filters/dist/hashing/hashing.js';
import { cyrb53 } from './bloom.js';

const BloomFilter = bloomFilterModule.default;
const Hashing = hashingModule.default;

/**
 * A worker's own filter in front of the shared one: a URL this worker has
 * already offered to Redis (new or already seen there) is not offered
 * again. Navigation links repeat on nearly every page of a site, so most of
 * a page's links stop here, costing no Redis call. The shared filter stays
 * the authority (two workers racing on a URL still enqueue it once): this
 * one only remembers what its worker already sent. A false positive here
 * drops a URL as the shared filter's would, so its rate is reported beside
 * the shared one's (`weir status`).
 */
export const LOCAL_SEEN = {
  /** URLs remembered before the filter starts afresh (bounding its memory: 4.2 MB at this size and rate). */
  maxUrls: 1_000_000,
  falsePositiveRate: 1e-7,
} as const;

/** bloom-filters' own index derivation, fed by 32 bits of cyrb53 instead of xxhashjs (about 40 µs a URL here; this under 3). */
class FastHashing extends Hashing {
  override serialize(element: string | ArrayBuffer | Buffer, seed = 0): number {
    // 32 bits: the package combines two hashes as a + i·b (+ (i³ − i)/6) in
    // doubles, which stays exact only if they are this small (53-bit ones
    // lost their low bits there and ran at 2,000 times the rate).
    const text = typeof element === 'string' ? element : Buffer.from(element as ArrayBuffer).toString('latin1');
    return cyrb53(text, seed) % 4294967296;
  }
}

export class LocalSeen {
  private filter: InstanceType<typeof BloomFilter>;
  private count = 0;
  private readonly pending = new Set<string>();
  private readonly capacity: number;

  constructor(
    expectedUrls: number,
    private readonly targetRate: number = LOCAL_SEEN.falsePositiveRate,
  ) {
    this.capacity = Math.max(1000, Math.min(expectedUrls, LOCAL_SEEN.maxUrls));
    this.filter = this.fresh();
  }

  private fresh(): InstanceType<typeof BloomFilter> {
    const f = BloomFilter.create(this.capacity, this.targetRate);
    f._hashing = new FastHashing();
    return f;
  }

  has(url: string): boolean {
    return this.pending.has(url) || this.filter.has(url);
  }

  /**
   * URLs sent to Redis and not answered yet: taken as seen meanwhile, so
   * pages of this worker that finish together (the same navigation links)
   * offer each once. Bounded by the links of the pages in flight.
   */
  offering(urls: readonly string[]): void {
    for (const u of urls) this.pending.add(u);
  }

  /** The answer for `offering`'s URLs came (they are remembered), or the call failed (they may be offered again). */
  settle(urls: readonly string[], answered: boolean): void {
    for (const u of urls) this.pending.delete(u);
    if (answered) this.addAll(urls);
  }

  /** URLs Redis has answered for (enqueued or already seen there). */
  addAll(urls: Iterable<string>): void {
    for (const u of urls) {
      if (this.count >= this.capacity) {
        this.filter = this.fresh();
        this.count = 0;
      }
      this.filter.add(u);
      this.count++;
    }
  }

  /**
   * The chance that an unseen URL is taken for seen now: (1 − e^(−kn/m))^k
   * for n URLs in m bits with k hashes (bloom-filters' own rate() reads the
   * fill as 1 − e^(−fill), which understates it).
   */
  get falsePositiveRate(): number {
    const { _size: m, _nbHashes: k } = this.filter;
    return (1 - Math.exp((-k * this.count) / m)) ** k;
  }
}
