import type { QueueLimit } from '../../queue/index.js';
import type { ByDomain, QueueGroup, QueueRouter, Scope } from '../links/index.js';
import type { QueuedUrl } from '../store/index.js';
import type { AddressBook } from './address-book.js';

/** Hosts resolved at once while a batch is routed. */
const RESOLVES_IN_FLIGHT = 32;

/** A server's queue: its address after '@', which no domain key starts with. */
export const serverQueue = (address: string): string => `@${address}`;
export const isServerQueue = (queue: string): boolean => queue.startsWith('@');
/** The address a server's queue is named by (its requests connect there); undefined for a domain's queue. */
export const serverAddress = (queue: string): string | undefined => (isServerQueue(queue) ? queue.slice(1) : undefined);

/**
 * Politeness per server (seed perServer): every URL goes to the queue of the
 * address its host resolves to, so the sites one server holds share one
 * schedule. A server's queue is created by the first enqueue that meets it
 * with the limits of that URL's domain, and every later one tightens it to
 * its own domain's where they are stricter (lua/enqueue.lua 'lower'): the
 * server keeps its strictest site's rate and in-flight cap, however many
 * sites and workers meet it, in any order. A host that does not resolve
 * goes to its domain's own queue, where its fetch fails as any would.
 */
export class ServerRouter implements QueueRouter {
  constructor(
    private readonly book: AddressBook,
    private readonly scope: Scope,
  ) {}

  /** The server queue of a URL's host now; null when it does not resolve. */
  async queueOf(url: string): Promise<string | null> {
    const address = await this.book.addressOf(new URL(url).hostname);
    return address === null ? null : serverQueue(address);
  }

  /** The limits a URL of `domain` brings to its server's queue. */
  async limitsOf(domain: string): Promise<QueueLimit | undefined> {
    const l = await this.scope.limitsOf(domain);
    return l ? { rate: l.rate, maxInFlight: l.maxInFlight } : undefined;
  }

  async regroup(batch: ByDomain): Promise<QueueGroup[]> {
    // (Each URL's host, parsed once: a page's links pass through here.)
    const hostOf = new Map<QueuedUrl, string>();
    for (const list of batch.groups.values()) for (const q of list) hostOf.set(q, new URL(q.url).hostname);
    const addressOf = new Map<string, string | null>();
    const todo = [...new Set(hostOf.values())];
    for (let i = 0; i < todo.length; i += RESOLVES_IN_FLIGHT) {
      const chunk = todo.slice(i, i + RESOLVES_IN_FLIGHT);
      const got = await Promise.all(chunk.map((h) => this.book.addressOf(h)));
      chunk.forEach((h, j) => addressOf.set(h, got[j] ?? null));
    }
    // One group per (queue, domain): each domain brings its own limits to the queue it shares (looked up together).
    const domains = [...batch.groups];
    const limits = await Promise.all(domains.map(([domain]) => this.limitsOf(domain)));
    const groups = new Map<string, QueueGroup>();
    for (const [i, [domain, list]] of domains.entries()) {
      const create = limits[i];
      for (const q of list) {
        const address = addressOf.get(hostOf.get(q) as string) ?? null;
        const queue = address === null ? domain : serverQueue(address);
        const key = `${queue}\n${domain}`;
        const g = groups.get(key);
        if (g) g.list.push(q);
        else groups.set(key, { queue, list: [q] as QueuedUrl[], create, lower: address !== null });
      }
    }
    return [...groups.values()];
  }
}
