/**
 * How coalesced enqueue requests become script calls (lua/enqueue.lua): at
 * most `max` items a call, each call's items grouped by queue, each queue's
 * items in the order they were asked for. Dedupe bits go as one block spec
 * per item when every item's bits lie in one 512-bit block (the crawler's
 * blocked Bloom filter: lua/includes/dedupe.lua), else as positions.
 */
export interface EnqueueRequest {
  queue: string;
  items: readonly string[];
  dedupe: readonly (readonly number[])[] | undefined;
}

/** One script call: its arguments, and for each of its items (in order) the request it came from. */
export interface EnqueueCall {
  args: (string | number)[];
  requestOf: number[];
}

export function enqueueCalls(reqs: readonly EnqueueRequest[], k: number, max: number): EnqueueCall[] {
  const entries = reqs.flatMap((r, req) => r.items.map((item, j) => ({ req, queue: r.queue, item, bits: r.dedupe?.[j] ?? [] })));
  const calls: EnqueueCall[] = [];
  for (let i = 0; i < entries.length; i += max) {
    const groups = new Map<string, typeof entries>();
    for (const e of entries.slice(i, i + max)) {
      const group = groups.get(e.queue);
      if (group) group.push(e);
      else groups.set(e.queue, [e]);
    }
    const ordered = [...groups.values()].flat();
    const specs = k > 0 ? blockSpecs(ordered.map((e) => e.bits)) : null;
    const args: (string | number)[] = [specs ? `b${k}` : k, groups.size];
    for (const [queue, group] of groups) args.push(queue, group.length);
    for (const e of ordered) args.push(e.item);
    if (specs) args.push(...specs);
    else if (k > 0) for (const e of ordered) args.push(...e.bits);
    calls.push({ args, requestOf: ordered.map((e) => e.req) });
  }
  return calls;
}

const BLOCK_BITS = 512;

/**
 * Each item's bits as "<block>:<pairs>", two characters a bit: '0' + its
 * byte in the 64-byte block, '0' + its bit in the byte (0 the high bit, as
 * Redis counts); or null if some item's bits span two blocks.
 */
export function blockSpecs(items: readonly (readonly number[])[]): string[] | null {
  const specs: string[] = [];
  for (const bits of items) {
    const block = Math.floor((bits[0] ?? 0) / BLOCK_BITS);
    let pairs = '';
    for (const p of bits) {
      const o = p - block * BLOCK_BITS;
      if (o < 0 || o >= BLOCK_BITS) return null;
      pairs += String.fromCharCode(48 + (o >> 3), 48 + (o & 7));
    }
    specs.push(`${block}:${pairs}`);
  }
  return specs;
}
