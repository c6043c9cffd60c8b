/**
 * Sets and maps of strings kept as hashes in one typed array, for
 * collections too big to hold as strings: a kickoff's domain files list
 * 10^6 domains, some 70 MB as a `Set<string>` against its 200 MB bound.
 * Open addressing, linear probing; the table doubles when half full.
 *
 * A key is known by its hash alone, so two strings that share it are one
 * key: with b bits of hash, about n × m / 2^b of m lookups in n keys answer
 * wrongly. HashedKeySet keeps 64 bits (8 bytes a slot, 16 to 32 a key;
 * 3 × 10^-7 for 5 × 10^6 lookups among 10^6 keys): for shortcuts that stay
 * correct without it. HashedKeyMap keeps 80 and a 16-bit value (12 bytes a
 * slot; 3 × 10^-12 there): for answers that must be right.
 */

const SEED_A = 0x2545f491;
const SEED_B = 0x9e3779b9;
/** Slots at first at least (a power of two). */
const MIN_SLOTS = 1 << 12;
/** A map's value: the low half of its slot's third word (the high half is 16 more bits of hash). */
const VALUE_MASK = 0xffff;

/** The table under both: a slot is two 32-bit words of a key's hash (both 0: empty) and, in a map, a third: 16 bits more of it above the value. */
class HashedTable {
  private table: Uint32Array;
  private slots: number;
  /** The most slots the table may have (a power of two). */
  private readonly maxSlots: number;
  private readonly stride: number;
  private count = 0;
  /** The words of the last key hashed (no array a call); w3 the map's 16 more bits, its value bits 0. */
  private w1 = 0;
  private w2 = 0;
  private w3 = 0;
  /** The string and start of the last key's first part, and the hash state after it (hash). */
  private baseOf = '';
  private baseFrom = -1;
  private readonly base = { a1: 0, a2: 0, b1: 0, b2: 0 };

  constructor(
    /** A map (three words a slot) or a set (two). */
    private readonly valued: boolean,
    /** Keys expected: the table starts big enough for them (no doubling on the way, each a copy). */
    expected = 0,
    /** The most slots the table may have (rounded up to a power of two); a key that would need more is refused (put returns false). */
    slotsAtMost = 2 ** 30,
  ) {
    this.stride = valued ? 3 : 2;
    let most = MIN_SLOTS;
    while (most < slotsAtMost) most *= 2;
    this.maxSlots = most;
    this.slots = MIN_SLOTS;
    while (this.slots < expected * 2 && this.slots < this.maxSlots) this.slots *= 2;
    this.table = new Uint32Array(this.slots * this.stride);
  }

  get size(): number {
    return this.count;
  }

  /** Empties the table and gives its memory back. */
  clear(): void {
    this.slots = MIN_SLOTS;
    this.table = new Uint32Array(this.slots * this.stride);
    this.count = 0;
  }

  /** The slot index of the key last hashed, or of the empty slot where it would go. */
  private find(): number {
    const { table, stride, w1, w2, w3, valued } = this;
    const mask = this.slots - 1;
    // (Never more than half full: an empty slot ends every probe.)
    for (let i = w1 & mask; ; i = (i + 1) & mask) {
      const at = i * stride;
      const a = table[at] as number;
      const b = table[at + 1] as number;
      if (a === w1 && b === w2 && (!valued || ((table[at + 2] as number) & ~VALUE_MASK) >>> 0 === w3)) return at;
      if (a === 0 && b === 0) return at;
    }
  }

  /** Whether the key s[from..] + suffix is held; in a map, its value, else 0; -1 when not held. */
  lookUp(s: string, from = 0, suffix = ''): number {
    this.hash(s, from, suffix);
    const at = this.find();
    if (this.table[at] === 0 && this.table[at + 1] === 0) return -1;
    return this.valued ? (this.table[at + 2] as number) & VALUE_MASK : 0;
  }

  /** Holds `key` (in a map with `value`, 0 to 65,535); false when the table would need more than maxSlots. */
  put(key: string, value = 0): boolean {
    this.hash(key);
    let at = this.find();
    if (this.table[at] === 0 && this.table[at + 1] === 0) {
      if ((this.count + 1) * 2 > this.slots) {
        if (this.slots * 2 > this.maxSlots) return false;
        this.grow();
        at = this.find();
      }
      this.table[at] = this.w1;
      this.table[at + 1] = this.w2;
      this.count += 1;
    }
    if (this.valued) this.table[at + 2] = (this.w3 | (value & VALUE_MASK)) >>> 0;
    return true;
  }

  private grow(): void {
    const old = this.table;
    const { stride } = this;
    const [w1, w2, w3] = [this.w1, this.w2, this.w3];
    this.slots *= 2;
    this.table = new Uint32Array(this.slots * stride);
    for (let i = 0; i < old.length; i += stride) {
      if (old[i] === 0 && old[i + 1] === 0) continue;
      this.w1 = old[i] as number;
      this.w2 = old[i + 1] as number;
      this.w3 = this.valued ? ((old[i + 2] as number) & ~VALUE_MASK) >>> 0 : 0;
      this.table.set(old.subarray(i, i + stride), this.find());
    }
    [this.w1, this.w2, this.w3] = [w1, w2, w3];
  }

  /**
   * The hash words of the string s from `from` on followed by `suffix`
   * (a key made of parts is hashed without being made): cyrb53's steps
   * under two seeds at once, a1 a2 b1 b2 after its finish; the words a1, b1
   * and, in a map, 16 bits of a2 ^ b2. Never both first words 0. The state
   * after s[from..] is kept, and taken up again when the next key hashed
   * has the same s and from (a name looked up with its port, then
   * without: DomainList's match hashes each name once, not twice).
   */
  private hash(s: string, from = 0, suffix = ''): void {
    let a1: number, a2: number, b1: number, b2: number;
    if (s === this.baseOf && from === this.baseFrom) {
      const base = this.base;
      a1 = base.a1;
      a2 = base.a2;
      b1 = base.b1;
      b2 = base.b2;
    } else {
      a1 = 0xdeadbeef ^ SEED_A;
      a2 = 0x41c6ce57 ^ SEED_A;
      b1 = 0xdeadbeef ^ SEED_B;
      b2 = 0x41c6ce57 ^ SEED_B;
      for (let i = from; i < s.length; i++) {
        const ch = s.charCodeAt(i);
        a1 = Math.imul(a1 ^ ch, 2654435761);
        a2 = Math.imul(a2 ^ ch, 1597334677);
        b1 = Math.imul(b1 ^ ch, 2654435761);
        b2 = Math.imul(b2 ^ ch, 1597334677);
      }
      this.baseOf = s;
      this.baseFrom = from;
      const base = this.base;
      base.a1 = a1;
      base.a2 = a2;
      base.b1 = b1;
      base.b2 = b2;
    }
    for (let i = 0; i < suffix.length; i++) {
      const ch = suffix.charCodeAt(i);
      a1 = Math.imul(a1 ^ ch, 2654435761);
      a2 = Math.imul(a2 ^ ch, 1597334677);
      b1 = Math.imul(b1 ^ ch, 2654435761);
      b2 = Math.imul(b2 ^ ch, 1597334677);
    }
    a1 = Math.imul(a1 ^ (a1 >>> 16), 2246822507) ^ Math.imul(a2 ^ (a2 >>> 13), 3266489909);
    a2 = Math.imul(a2 ^ (a2 >>> 16), 2246822507) ^ Math.imul(a1 ^ (a1 >>> 13), 3266489909);
    b1 = Math.imul(b1 ^ (b1 >>> 16), 2246822507) ^ Math.imul(b2 ^ (b2 >>> 13), 3266489909);
    b2 = Math.imul(b2 ^ (b2 >>> 16), 2246822507) ^ Math.imul(b1 ^ (b1 >>> 13), 3266489909);
    this.w1 = a1 >>> 0;
    this.w2 = b1 >>> 0;
    if (this.w1 === 0 && this.w2 === 0) this.w2 = 1;
    this.w3 = this.valued ? ((a2 ^ b2) & ~VALUE_MASK) >>> 0 : 0;
  }
}

/** A set of strings as 64-bit hashes (see the top of this file), of at most maxKeys keys when given. */
export class HashedKeySet {
  private readonly table: HashedTable;

  constructor(
    /** Keys held at most (as the table's slots are a power of two, up to 2^k - 1 more): add refuses more. */
    readonly maxKeys = 2 ** 29,
  ) {
    this.table = new HashedTable(false, 0, 2 * maxKeys);
  }

  get size(): number {
    return this.table.size;
  }

  /** Empties the set and gives its table back (a kickoff's 16 MB once its check pass is done). */
  clear(): void {
    this.table.clear();
  }

  /** Holds `key`; false, and nothing held, when that would be a key over maxKeys. */
  add(key: string): boolean {
    return this.table.put(key);
  }

  has(key: string): boolean {
    return this.table.lookUp(key) !== -1;
  }
}

/** A map of strings to 16-bit unsigned values, keys as 80-bit hashes (see the top of this file), of at most maxKeys keys. */
export class HashedKeyMap {
  private readonly table: HashedTable;

  constructor(
    /** Keys expected (the table is made for them at once). */
    expected: number,
    /** Keys held at most (as the table's slots are a power of two, up to 2^k - 1 more): set refuses more. */
    readonly maxKeys: number,
  ) {
    this.table = new HashedTable(true, expected, 2 * maxKeys);
  }

  get size(): number {
    return this.table.size;
  }

  /** The value of `key`, or undefined; of the key s.slice(from) + suffix when given those (without making it). */
  get(s: string, from = 0, suffix = ''): number | undefined {
    const v = this.table.lookUp(s, from, suffix);
    return v === -1 ? undefined : v;
  }

  /** Sets `key` to `value` (0 to 65,535); false, and nothing set, when that would be a key over maxKeys. */
  set(key: string, value: number): boolean {
    return this.table.put(key, value);
  }
}
