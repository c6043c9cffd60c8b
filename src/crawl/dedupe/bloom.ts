/**
 * The shared Bloom filter's arithmetic. The bits live in Redis as the
 * queue's dedupe bitmap; this module only sizes it and computes where a
 * URL's bits are.
 *
 * Layout: blocked. All of a URL's k bits fall in one 512-bit (64-byte)
 * block, so checking a URL touches one cache line of the bitmap instead of
 * k scattered ones. A blocked filter's false-positive rate is above a
 * classic one's of the same size (blocks fill unevenly;
 * blockedFalsePositiveRate computes by how much), so weir takes the classic sizes
 * (those of the bloom-filters package: m = ceil(-n ln p / (ln 2)^2),
 * k = ceil((m / n) ln 2)) and then grows the bitmap until the blocked rate,
 * computed exactly, meets the target; `estimatedFalsePositiveRate` reports
 * the rate from the real fill of the bitmap.
 */
export const BLOCK_BITS = 512;

export interface BloomParams {
  bits: number;
  hashes: number;
}

/** The classic sizes (the bloom-filters package's optimalFilterSize and optimalHashes). */
export function classicBloomParams(expectedItems: number, falsePositiveRate: number): { bits: number; hashes: number } {
  const n = Math.max(1, expectedItems);
  const m = Math.ceil((-n * Math.log(falsePositiveRate)) / Math.LN2 ** 2);
  const k = Math.min(64, Math.max(1, Math.ceil((m / n) * Math.LN2)));
  return { bits: m, hashes: k };
}

/**
 * Expected false-positive rate of a blocked filter: blocks receive a
 * Poisson-distributed number of keys, and a query is a false positive with
 * the fill of its block to the k-th power, averaged over blocks.
 */
export function blockedFalsePositiveRate(bits: number, hashes: number, items: number): number {
  const blocks = bits / BLOCK_BITS;
  const lambda = items / blocks;
  const top = Math.ceil(lambda + 12 * Math.sqrt(lambda) + 30);
  let p = Math.exp(-lambda); // P(j = 0)
  let sum = 0;
  for (let j = 0; j <= top; j++) {
    if (j > 0) p *= lambda / j;
    sum += p * (1 - (1 - 1 / BLOCK_BITS) ** (j * hashes)) ** hashes;
  }
  return sum;
}

/**
 * What weir sized bitmaps with before choosing k for the blocked layout:
 * the classic k, the bitmap grown until the blocked rate meets the target.
 * An arena kicked off then keeps these numbers (kickoff.ts).
 */
export function legacyBloomParams(expectedItems: number, falsePositiveRate: number): BloomParams {
  const n = Math.max(1, expectedItems);
  const classic = classicBloomParams(n, falsePositiveRate);
  let bits = Math.ceil(classic.bits / BLOCK_BITS) * BLOCK_BITS;
  for (let i = 0; i < 200 && blockedFalsePositiveRate(bits, classic.hashes, n) > falsePositiveRate; i++) {
    bits = Math.ceil((bits * 1.02) / BLOCK_BITS) * BLOCK_BITS;
  }
  return { bits, hashes: classic.hashes };
}

/**
 * Bitmap size and hash count for n expected items at false-positive rate p.
 * Start from the classic sizes, grown (in 2% steps, whole blocks) until the
 * blocked layout's own rate is at the target: that bitmap is the memory
 * budget. Then take the fewest hashes that meet the target within that
 * budget: blocks fill unevenly, so past a point more hashes buy little, and
 * every hash is one more bit Redis tests and sets per URL (at p = 10⁻⁶ the
 * classic 20 become 14; at 10⁻³, 10 become 9), and the fewest whole blocks
 * at which those meet the target (never more than the budget).
 */
export function bloomParams(expectedItems: number, falsePositiveRate: number): BloomParams {
  const n = Math.max(1, expectedItems);
  const legacy = legacyBloomParams(n, falsePositiveRate);
  const meets = (bits: number, k: number): boolean => blockedFalsePositiveRate(bits, k, n) <= falsePositiveRate;
  let hashes = legacy.hashes;
  while (hashes > 1 && meets(legacy.bits, hashes - 1)) hashes--;
  // The fewest whole blocks (at most the budget's) at which those hashes meet p.
  let lo = 1;
  let hi = legacy.bits / BLOCK_BITS;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (meets(mid * BLOCK_BITS, hashes)) hi = mid;
    else lo = mid + 1;
  }
  return { bits: hi * BLOCK_BITS, hashes };
}

/** The most bits one dedupe bitmap can have (a Redis string's largest size). */
export const MAX_BLOOM_BITS = 2 ** 32;

/** The most URLs one bitmap serves at false-positive rate p (bloomParams' bits stay within MAX_BLOOM_BITS). */
export function maxBloomItems(falsePositiveRate: number): number {
  let lo = 1;
  let hi = 2 ** 32;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (bloomParams(mid, falsePositiveRate).bits <= MAX_BLOOM_BITS) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** cyrb53: a fast, well-mixed 53-bit string hash (public domain, bryc). */
export function cyrb53(str: string, seed: number): number {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = 0; i < str.length; i++) {
    const ch = str.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/** A 32-bit finaliser (murmur3's fmix32): turns a counter into well-spread bits. */
function mix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/**
 * The k bit positions of `key` in a bitmap of `bits` bits: one block chosen
 * by one hash, and k distinct offsets in it drawn from a second hash by a
 * mixed counter. (Plain double hashing, a + i·b, correlates keys' bit
 * patterns inside a block and ran at twice the blocked model's rate.)
 */
export function bloomPositions(key: string, params: BloomParams): number[] {
  const blocks = params.bits / BLOCK_BITS;
  const block = cyrb53(key, 0x9e3779b9) % blocks;
  const g = cyrb53(key, 0x85ebca6b);
  let state = (g >>> 0) ^ Math.floor(g / 4294967296);
  const base = block * BLOCK_BITS;
  const out: number[] = [];
  for (let i = 0; out.length < params.hashes && i < 4 * params.hashes + 64; i++) {
    state = (state + 0x9e3779b9) >>> 0;
    const p = base + (mix32(state) & (BLOCK_BITS - 1));
    // (Distinct offsets: a look along the few taken so far, not a Set a key: this runs for every link and start URL.)
    if (!out.includes(p)) out.push(p);
  }
  return out;
}

/** Estimated false-positive rate of a filter with this fraction of its bits set. */
export function estimatedFalsePositiveRate(fill: number, hashes: number): number {
  return fill ** hashes;
}
