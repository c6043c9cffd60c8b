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
  positions.forEach((p, h) => out.writeUInt16BE(p - block * BLOCK_BITS, 4 + 2 * h));
  return out;
}

/**
 * The script's trailing flags (lua/enqueue.lua), checked: 'lower', 'front'.
 * (A request's `create` limits go with its queue instead: enqueueCalls.)
 */
function enqueueOptionArgs(options: EnqueueOptions): string[] {
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
export function checkedEnqueue(queue: string, items: readonly string[], options: EnqueueOptions): { req: EnqueueRequest; k: number | string; opts: string[] } {
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
    // Each queue's limits to be made with, from its first request that has any ('' for none).
    const creates = [...groups.values()].map((group) => {
      for (const e of group) {
        const c = (reqs[reqOf[e] as number] as EnqueueRequest).create;
        if (c) return c;
      }
      return null;
    });
    if (creates.some((c) => c !== null)) {
      args.push('creates');
      for (const c of creates) args.push(...(c ?? ['', 0]));
    }
    for (const a of after) args.push(a);
    calls.push({ args, requestOf });
  }
  return calls;
}
