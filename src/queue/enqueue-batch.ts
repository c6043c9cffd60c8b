/**
 * How coalesced enqueue requests become script calls (lua/enqueue.lua): at
 * most `max` items a call, each call's items grouped by queue, each queue's
 * items in the order they were asked for; the options after them.
 */
import { checkDedupe, checkInt, checkItems, checkName, checkRate } from './checks.js';
import { QueueArgumentError } from './errors.js';
import { LIMITS } from './limits.js';
import type { ScriptArg } from './script-call.js';
import type { EnqueueOptions } from './types.js';

/** Bits in a block of a blocked Bloom filter: an item whose positions all fall in one may go in block form (lua/includes/dedupe.lua). */
const BLOCK_BITS = 512;

/**
 * Whether every item's positions fall in one 512-bit block each (a blocked
 * Bloom filter's, as the crawler's are): then, asked (dedupeBlocks), each
 * item's go as one argument, its block and k offsets packed
 * (lua/includes/dedupe.lua's block form), not k decimal numbers for BITFIELD.
 */
function inBlocks(dedupe: readonly (readonly number[])[]): boolean {
  for (const d of dedupe) {
    const block = Math.floor((d[0] as number) / BLOCK_BITS);
    if (block >= 2 ** 32) return false;
    for (const p of d) if (Math.floor(p / BLOCK_BITS) !== block) return false;
  }
  return true;
}

/** An item's positions in block form: '>I4' the block, then each offset in it as '>H'. */
function blockForm(positions: readonly number[]): Buffer {
  const out = Buffer.allocUnsafe(4 + 2 * positions.length);
  const block = Math.floor((positions[0] as number) / BLOCK_BITS);
  out.writeUInt32BE(block, 0);
  for (let h = 0; h < positions.length; h++) out.writeUInt16BE((positions[h] as number) - block * BLOCK_BITS, 4 + 2 * h);
  return out;
}

const NO_OPTION_ARGS: readonly string[] = Object.freeze([]);

/**
 * The script's trailing flags (lua/enqueue.lua), checked: 'lower', 'front'.
 * (A request's `create` limits go with its queue instead: enqueueCalls.)
 */
function enqueueOptionArgs(options: EnqueueOptions): readonly string[] {
  // (Most enqueues have none: one array for them all, which also lets a caller see at once that two requests' are the same.)
  if (!options.lower && !options.front) return NO_OPTION_ARGS;
  const args: string[] = [];
  if (options.lower) {
    if (!options.create) throw new QueueArgumentError('WEIR_BAD_ARGS', 'lower needs create: the limits a queue tightens to');
    args.push('lower');
  }
  if (options.front) args.push('front');
  return args;
}

export interface EnqueueRequest {
  queue: string;
  items: readonly string[];
  dedupe: readonly (readonly number[])[] | undefined;
  /** The limits its queue is made with when unknown, as the script takes them (rate, maxInFlight). */
  create?: readonly [string | number, number] | undefined;
}

/**
 * One queue's enqueue checked (FairQueue.enqueue's arguments): its request
 * (with its `create` limits), its count of bit positions an item, written as
 * the script takes it ('b<k>' when they go in block form), its flag
 * arguments. Requests that differ only in their `create` limits share
 * script calls: each queue's go with it ('creates').
 */
export function checkedEnqueue(queue: string, items: readonly string[], options: EnqueueOptions): { req: EnqueueRequest; k: number | string; opts: readonly string[] } {
  checkName('queue name', queue);
  const k = checkDedupe(options.dedupe, items.length);
  checkItems(items);
  const form = k > 0 && options.dedupeBlocks === true && options.dedupe && inBlocks(options.dedupe) ? `b${k}` : k;
  const create = options.create
    ? ([checkRate(queue, options.create.rate), checkInt(`maxInFlight of queue ${queue}`, options.create.maxInFlight ?? 0, 0, LIMITS.maxInFlight)] as const)
    : undefined;
  return { req: { queue, items, dedupe: options.dedupe, create }, k: form, opts: enqueueOptionArgs(options) };
}

/** Requests by the script call key they share (shard, positions, options), each key's in the order given, with where each came from. */
export function byCallKey(checked: readonly { req: EnqueueRequest }[], keyOf: (req: EnqueueRequest, i: number) => string): Map<string, { at: number[]; reqs: EnqueueRequest[] }> {
  const out = new Map<string, { at: number[]; reqs: EnqueueRequest[] }>();
  checked.forEach(({ req }, i) => {
    if (req.items.length === 0) return;
    const key = keyOf(req, i);
    const b = out.get(key);
    if (b) {
      b.at.push(i);
      b.reqs.push(req);
    } else out.set(key, { at: [i], reqs: [req] });
  });
  return out;
}

/**
 * The call key of each of `checked`'s requests (its shard's tag, the shard
 * count, its positions' form, its flags: FairQueue.enqueueAll), made only
 * when it differs from the last one asked for (most often every request's
 * is one: a kickoff batch's 10,000).
 */
export function callKeyOf(shards: number, checked: readonly { k: number | string; opts: readonly string[] }[], tagOf: (queue: string) => string): (req: EnqueueRequest, i: number) => string {
  let last: { tag: string; k: number | string; opts: readonly string[]; key: string } | null = null;
  return (req, i) => {
    const { k, opts } = checked[i] as (typeof checked)[number];
    const tag = tagOf(req.queue);
    if (last?.tag !== tag || last.k !== k || last.opts !== opts) last = { tag, k, opts, key: JSON.stringify([tag, shards, k, opts]) };
    return last.key;
  };
}

/** Each of a call's queues' limits to be made with, from its first request that has any (null for none); null when none has any. */
function createsOf(groups: Map<string, number[]>, reqs: readonly EnqueueRequest[], reqOf: readonly number[]): (readonly [string | number, number] | null)[] | null {
  let creates: (readonly [string | number, number] | null)[] | null = null;
  let g = 0;
  for (const group of groups.values()) {
    for (const e of group) {
      const c = (reqs[reqOf[e] as number] as EnqueueRequest).create;
      if (c) {
        creates ??= new Array<null>(groups.size).fill(null);
        creates[g] = c;
        break;
      }
    }
    g++;
  }
  return creates;
}

/** One script call: its arguments, and for each of its items (in order) the request it came from. */
export interface EnqueueCall {
  args: ScriptArg[];
  requestOf: number[];
}

/**
 * The script calls for `reqs`: `before` and `after` (the shard count, the
 * options) around each call's own arguments; `k` as checkedEnqueue wrote it
 * (its positions in block form when 'b<k>'). Items are taken by index, a
 * call's queues in the order they first appear in it (no object per item:
 * a kickoff makes a million of these).
 */
export function enqueueCalls(reqs: readonly EnqueueRequest[], k: number | string, max: number, before: readonly (string | number)[] = [], after: readonly (string | number)[] = []): EnqueueCall[] {
  // Every item as (request, index in it), in request order.
  const reqOf: number[] = [];
  const idxOf: number[] = [];
  reqs.forEach((r, req) => {
    for (let j = 0; j < r.items.length; j++) {
      reqOf.push(req);
      idxOf.push(j);
    }
  });
  const calls: EnqueueCall[] = [];
  for (let start = 0; start < reqOf.length; start += max) {
    const end = Math.min(reqOf.length, start + max);
    // This call's items by queue, queues in order of first appearance.
    const groups = new Map<string, number[]>();
    for (let e = start; e < end; e++) {
      const queue = (reqs[reqOf[e] as number] as EnqueueRequest).queue;
      const group = groups.get(queue);
      if (group) group.push(e);
      else groups.set(queue, [e]);
    }
    const args: ScriptArg[] = [...before, k, groups.size];
    for (const [queue, group] of groups) args.push(queue, group.length);
    const requestOf: number[] = [];
    for (const group of groups.values()) {
      for (const e of group) {
        const r = reqs[reqOf[e] as number] as EnqueueRequest;
        args.push(r.items[idxOf[e] as number] as string);
        requestOf.push(reqOf[e] as number);
      }
    }
    if (k !== 0) {
      const blocks = typeof k === 'string';
      for (const group of groups.values()) {
        for (const e of group) {
          const bits = reqs[reqOf[e] as number]?.dedupe?.[idxOf[e] as number] ?? [];
          if (blocks) args.push(blockForm(bits));
          else for (const b of bits) args.push(b);
        }
      }
    }
    // Each queue's limits to be made with ('' for none).
    const creates = createsOf(groups, reqs, reqOf);
    if (creates) {
      args.push('creates');
      for (const c of creates) {
        if (c) args.push(c[0], c[1]);
        else args.push('', 0);
      }
    }
    for (const a of after) args.push(a);
    calls.push({ args, requestOf });
  }
  return calls;
}
