import type { EnqueueOptions, FairQueue, QueueLimit } from '../../queue/index.js';
import { bloomPositions, type BloomParams } from '../dedupe/index.js';
import { encodeItem, type QueuedUrl } from '../store/index.js';

/**
 * Queues' enqueues in flight at once: the queue client sends calls made
 * together as one batch of script calls, all written before the first
 * reply. Enough for a kickoff batch of start URLs, each of its own domain,
 * to go as one (a round trip per few hundred domains left Redis and this
 * process waiting on each other by turns).
 */
const DOMAINS_IN_FLIGHT = 10_000;

/** URLs grouped by the domain (the queue) each goes to, in the order added. */
export class ByDomain {
  readonly groups = new Map<string, QueuedUrl[]>();
  /** The domains added that the seed does not list (their queues may not exist yet). */
  readonly others = new Set<string>();
  /** The limits a listed domain's queue is made with if these are its first URLs (a kickoff of a new arena leaves listed domains' queues to them: kickoff.ts). */
  readonly limits = new Map<string, QueueLimit>();

  /** A URL for `domain`'s queue: `other` when the seed does not list it; `limits`, a listed domain's. */
  add(domain: string, url: QueuedUrl, other = false, limits: QueueLimit | null = null): void {
    const list = this.groups.get(domain);
    if (list) list.push(url);
    else this.groups.set(domain, [url]);
    if (other) this.others.add(domain);
    else if (limits && !this.limits.has(domain)) this.limits.set(domain, limits);
  }

  /** Drops a domain's URLs; how many there were. */
  drop(domain: string): number {
    const n = this.groups.get(domain)?.length ?? 0;
    this.groups.delete(domain);
    this.others.delete(domain);
    this.limits.delete(domain);
    return n;
  }

  /** How many URLs were added. */
  get count(): number {
    let n = 0;
    for (const list of this.groups.values()) n += list.length;
    return n;
  }

  urls(): string[] {
    return [...this.groups.values()].flatMap((list) => list.map((q) => q.url));
  }
}

/**
 * Whether a URL goes to its queue's front band, served before the rest of
 * its domain: sitemaps, and pages at most `priorityDepth` links from a
 * start URL (seed priorityDepth; null: sitemaps only).
 */
export function inFrontBand(q: QueuedUrl, priorityDepth: number | null): boolean {
  return q.sitemapLevel !== null || (priorityDepth !== null && q.depth <= priorityDepth);
}

/** URLs bound for one queue, and what its enqueue may create or tighten. */
export interface QueueGroup {
  queue: string;
  list: QueuedUrl[];
  /** Limits the queue is made with when it does not exist yet. */
  create?: QueueLimit | undefined;
  /** With create: an existing queue tightens to them where they are stricter (a queue several domains share). */
  lower?: boolean;
}

/** Where a batch's URLs go when that is not their domain's queue (politeness per server: servers/router.ts). */
export interface QueueRouter {
  regroup(batch: ByDomain): Promise<QueueGroup[]>;
}

/**
 * The one way URLs enter the queue, for kickoff and for links alike: one
 * enqueue per queue with each URL's Bloom positions (the queue drops those
 * already seen, atomically), many queues at once so the queue client
 * carries many in one script call. A queue is its domain's, or with a
 * `router` whatever it says (its server's). A domain the seed does not list
 * is created by its enqueue with `otherLimits` (its place among
 * maxDomains granted before: store/domain-claims.ts), a listed one with
 * its own limits when it has no queue yet (each queue's go with it: still
 * one script call). Each URL's Bloom
 * bits go as their block (dedupeBlocks: the crawler's filter is blocked),
 * for links as for a kickoff's start URLs: a simulated crawl over 30,000
 * domains whose pages each add about six URLs to the frontier cost Redis
 * 0.65-0.75 of the CPU a page with BITFIELD's positions (docs/scaling.md).
 * Returns how many were new.
 */
export async function enqueueUrls(
  queue: FairQueue,
  arena: string,
  bloom: BloomParams,
  batch: ByDomain,
  options: { otherLimits?: QueueLimit | undefined; priorityDepth?: number | null; router?: QueueRouter | undefined } = {},
): Promise<number> {
  const { otherLimits, priorityDepth = null, router } = options;
  const groups: QueueGroup[] = [];
  if (router) groups.push(...(await router.regroup(batch)));
  else for (const [domain, list] of batch.groups) groups.push({ queue: domain, list, create: batch.others.has(domain) ? otherLimits : batch.limits.get(domain) });
  return sendGroups(queue, arena, bloom, groups, priorityDepth);
}

/** How many were new, of each request's count. */
function sum(counts: readonly number[]): number {
  return counts.reduce((n, c) => n + c, 0);
}

/**
 * The groups' enqueues made and handed to the queue client before anything
 * is awaited, so that a batch in flight holds its calls and not its URLs
 * and groups too (a kickoff keeps two batches of 10,000 in flight).
 */
function sendGroups(queue: FairQueue, arena: string, bloom: BloomParams, groups: QueueGroup[], priorityDepth: number | null): Promise<number> {
  // Each queue's URLs in one enqueue, or two: those of its front band first.
  // (Objects made a queue, none a URL beyond its item and positions: a
  // kickoff batch is 10,000 queues of a URL each, and its garbage was a
  // third of the kickoff's CPU in the collector.)
  const calls: { queue: string; items: string[]; options: EnqueueOptions }[] = [];
  const add = (queue: string, list: readonly QueuedUrl[], create: QueueLimit | undefined, lower: boolean, front: boolean): void => {
    if (list.length === 0) return;
    const items = new Array<string>(list.length);
    const dedupe = new Array<number[]>(list.length);
    for (let i = 0; i < list.length; i++) {
      const q = list[i] as QueuedUrl;
      items[i] = encodeItem(q);
      dedupe[i] = bloomPositions(q.url, bloom);
    }
    const options: EnqueueOptions = { dedupe, dedupeBlocks: true };
    if (create) {
      options.create = create;
      options.lower = lower;
    }
    if (front) options.front = true;
    calls.push({ queue, items, options });
  };
  for (const g of groups) {
    const lower = g.lower === true;
    if (!g.list.some((q) => inFrontBand(q, priorityDepth))) add(g.queue, g.list, g.create, lower, false);
    else {
      add(g.queue, g.list.filter((q) => inFrontBand(q, priorityDepth)), g.create, lower, true);
      add(g.queue, g.list.filter((q) => !inFrontBand(q, priorityDepth)), g.create, lower, false);
    }
  }
  // (sum is not a closure here: one would hold this call's scope, and with it `calls`, until the replies.)
  if (calls.length <= DOMAINS_IN_FLIGHT) return queue.enqueueAll(arena, calls).then(sum);
  return (async () => {
    let enqueued = 0;
    for (let i = 0; i < calls.length; i += DOMAINS_IN_FLIGHT) enqueued += sum(await queue.enqueueAll(arena, calls.slice(i, i + DOMAINS_IN_FLIGHT)));
    return enqueued;
  })();
}
