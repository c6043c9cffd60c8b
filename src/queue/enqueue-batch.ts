/**
 * How coalesced enqueue requests become script calls (lua/enqueue.lua): at
 * most `max` items a call, each call's items grouped by queue, each queue's
 * items in the order they were asked for; the options after them.
 */
import { checkInt, checkRate } from './checks.js';
import { QueueArgumentError } from './errors.js';
import { LIMITS } from './limits.js';
import type { EnqueueOptions } from './types.js';

/** The script's trailing options (lua/enqueue.lua), checked: 'create' rate maxInFlight, 'lower', 'front'. */
export function enqueueOptionArgs(queue: string, options: EnqueueOptions): (string | number)[] {
  const args: (string | number)[] = [];
  if (options.create) args.push('create', checkRate(queue, options.create.rate), checkInt(`maxInFlight of queue ${queue}`, options.create.maxInFlight ?? 0, 0, LIMITS.maxInFlight));
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
    const args: (string | number)[] = [k, groups.size];
    for (const [queue, group] of groups) args.push(queue, group.length);
    for (const e of ordered) args.push(e.item);
    if (k > 0) for (const e of ordered) args.push(...e.bits);
    calls.push({ args, requestOf: ordered.map((e) => e.req) });
  }
  return calls;
}
