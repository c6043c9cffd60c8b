/**
 * The shared Bloom filter's arithmetic. The bits live in Redis as the
 * queue's dedupe bitmap; this module only sizes it and computes where a
 * URL's bits are.
 *
 * Layout: blocked. All of a URL's k bits fall in one 512-bit (64-byte)
 * block, so checking a URL touches one cache line of the bitmap instead of
 * k scattered ones. A blocked filter's false-positive rate is a little above
 * a classic one's of the same size (blocks fill unevenly), so weir sizes the
 * bitmap with the classic formulas (those of the bloom-filters package:
 * m = ceil(-n ln p / (ln 2)^2), k = ceil((m / n) ln 2)) and then rounds up
 * to whole blocks; `estimatedFalsePositiveRate` reports the rate from the
 * real fill of the bitmap.
 */
export const BLOCK_BITS = 512;

export interface BloomParams {
  bits: number;
  hashes: number;
}

/** Bitmap size and hash count for n expected items at false-positive rate p. */
export function bloomParams(expectedItems: number, falsePositiveRate: number): BloomParams {
  const n = Math.max(1, expectedItems);
  const m = Math.ceil((-n * Math.log(falsePositiveRate)) / Math.LN2 ** 2);
  const k = Math.min(64, Math.max(1, Math.ceil((m / n) * Math.LN2)));
  const bits = Math.min(2 ** 32, Math.ceil(m / BLOCK_BITS) * BLOCK_BITS);
  return { bits, hashes: k };
}

/** cyrb53: a fast, well-mixed 53-bit string hash (public domain, bryc). */
function cyrb53(str: string, seed: number): number {
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

/**
 * The k bit positions of `key` in a bitmap of `bits` bits: one block chosen
 * by one hash, and k distinct offsets in it by double hashing with a second.
 */
export function bloomPositions(key: string, params: BloomParams): number[] {
  const blocks = params.bits / BLOCK_BITS;
  const h = cyrb53(key, 0x9e3779b9);
  const block = h % blocks;
  const g = cyrb53(key, 0x85ebca6b);
  const a = g % BLOCK_BITS;
  const b = (Math.floor(g / BLOCK_BITS) % (BLOCK_BITS / 2)) * 2 + 1; // odd: steps through every offset
  const base = block * BLOCK_BITS;
  const out: number[] = [];
  for (let i = 0; i < params.hashes; i++) out.push(base + ((a + i * b) % BLOCK_BITS));
  return out;
}

/** Estimated false-positive rate of a filter with this fraction of its bits set. */
export function estimatedFalsePositiveRate(fill: number, hashes: number): number {
  return fill ** hashes;
}
