/**
 * A set of strings kept as 64-bit hashes in one typed array (16 to 32 bytes
 * a string: the table doubles when half full), for sets too big to hold as
 * strings: a kickoff's domain files list 10^6 domains, some 70 MB as a
 * `Set<string>` against its 200 MB bound, 16 MB here (2^21 slots). `has` may answer yes
 * for a string never added when two strings share all 64 bits: about n × m
 * / 2^64 for m lookups in a set of n (3 × 10^-7 for 5 × 10^6 lookups among
 * 10^6 keys), so it is for shortcuts that stay correct without it, not for
 * answers that must be exact.
 */

import { cyrb53 } from '../dedupe/index.js';

/** Slots at first (a power of two); the table doubles when half full. */
const INITIAL_SLOTS = 1 << 12;

export class HashedKeySet {
  /** Two 32-bit halves a slot; (0, 0) is an empty slot. */
  private table = new Uint32Array(INITIAL_SLOTS * 2);
  private slots = INITIAL_SLOTS;
  private count = 0;
  /** The halves of the last string hashed (no array a call). */
  private h1 = 0;
  private h2 = 0;

  get size(): number {
    return this.count;
  }

  /** Empties the set and gives its table back (a kickoff's 16 MB once its check pass is done). */
  clear(): void {
    this.slots = INITIAL_SLOTS;
    this.table = new Uint32Array(INITIAL_SLOTS * 2);
    this.count = 0;
  }

  add(key: string): void {
    this.hash(key);
    if (this.insert(this.h1, this.h2)) this.count += 1;
    if (this.count * 2 > this.slots) this.grow();
  }

  has(key: string): boolean {
    this.hash(key);
    const { table, h1, h2 } = this;
    const mask = this.slots - 1;
    // (The table is never more than half full: an empty slot ends every probe.)
    for (let i = h1 & mask; ; i = (i + 1) & mask) {
      const a = table[2 * i] as number;
      const b = table[2 * i + 1] as number;
      if (a === h1 && b === h2) return true;
      if (a === 0 && b === 0) return false;
    }
  }

  /** Places a hash; false when it was there already. */
  private insert(h1: number, h2: number): boolean {
    const { table } = this;
    const mask = this.slots - 1;
    for (let i = h1 & mask; ; i = (i + 1) & mask) {
      const a = table[2 * i] as number;
      const b = table[2 * i + 1] as number;
      if (a === h1 && b === h2) return false;
      if (a === 0 && b === 0) {
        table[2 * i] = h1;
        table[2 * i + 1] = h2;
        return true;
      }
    }
  }

  private grow(): void {
    const old = this.table;
    this.slots *= 2;
    this.table = new Uint32Array(this.slots * 2);
    for (let i = 0; i < old.length; i += 2) {
      const a = old[i] as number;
      const b = old[i + 1] as number;
      if (a !== 0 || b !== 0) this.insert(a, b);
    }
  }

  /** Two 32-bit hashes of the string (the low bits of cyrb53 under two seeds), into h1 and h2; never both 0. */
  private hash(s: string): void {
    this.h1 = cyrb53(s, 0x2545f491) % 4294967296;
    this.h2 = cyrb53(s, 0x9e3779b9) % 4294967296;
    if (this.h1 === 0 && this.h2 === 0) this.h2 = 1;
  }
}
