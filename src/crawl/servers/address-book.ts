import type { RedisClient } from '../../queue/index.js';
import type { LookupFunction } from '../fetch/index.js';

/** How long an address, once resolved, stands for its host before it is resolved again. */
export const ADDRESS_TTL_MS = 3_600_000;
/** How long a worker trusts its own copy of a host's address before it reads the shared one again. */
const LOCAL_TTL_MS = 60_000;
/** Hosts a worker remembers; past this many it forgets them all and reads them again as they come. */
const REMEMBERED_MAX = 100_000;

/**
 * One script on the arena's hash of host addresses (field host, value
 * "<address> <resolved at, ms by Redis's clock>"). ARGV[1] host, ARGV[2]
 * the address just resolved or '' to only read, ARGV[3] the TTL, ms.
 * Returns the entry that stands: a fresh one already there wins over the
 * new address (two workers that resolve a host at once agree on the first
 * written); a stale or missing one is replaced when an address is given.
 */
const ADDRESS_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then
  local at = tonumber(string.match(cur, ' (%d+)$'))
  if at and now - at < tonumber(ARGV[3]) then return cur end
end
if ARGV[2] == '' then return false end
local entry = ARGV[2] .. ' ' .. now
redis.call('HSET', KEYS[1], ARGV[1], entry)
return entry
`;

/**
 * The address each host resolves to, one answer shared by every worker of
 * an arena: the first worker to need a host resolves it (through the
 * crawler's own guarded lookup, so a private address is refused as it is
 * for a fetch) and records it in Redis; the others read it there. An
 * answer stands for ADDRESS_TTL_MS, then the next worker to need the host
 * resolves it again. A host with several addresses is pinned to the first
 * one its lookup gives: a request served from a server's queue connects to
 * that server's address (Fetcher's `address`), so the server that is paced
 * is the server that is asked.
 */
export class AddressBook {
  private readonly local = new Map<string, { address: string; until: number }>();
  private readonly pending = new Map<string, Promise<string | null>>();

  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
    private readonly lookup: LookupFunction,
    private readonly ttlMs = ADDRESS_TTL_MS,
  ) {}

  /** The address of `hostname` (as a URL's `hostname` gives it); null when it does not resolve or is refused. */
  async addressOf(hostname: string): Promise<string | null> {
    const literal = ipLiteral(hostname);
    if (literal !== null) return literal;
    const host = hostname.toLowerCase();
    const known = this.local.get(host);
    if (known && known.until > performance.now()) return known.address;
    let p = this.pending.get(host);
    if (!p) {
      p = this.shared(host).finally(() => this.pending.delete(host));
      this.pending.set(host, p);
    }
    return p;
  }

  private async shared(host: string): Promise<string | null> {
    let entry = (await this.redis.eval(ADDRESS_SCRIPT, 1, this.key, host, '', this.ttlMs)) as string | null;
    if (entry === null) {
      const resolved = await this.resolve(host);
      if (resolved === null) return null;
      entry = (await this.redis.eval(ADDRESS_SCRIPT, 1, this.key, host, resolved, this.ttlMs)) as string;
    }
    const address = entry.slice(0, entry.lastIndexOf(' '));
    if (this.local.size >= REMEMBERED_MAX) this.local.clear();
    this.local.set(host, { address, until: performance.now() + Math.min(LOCAL_TTL_MS, this.ttlMs) });
    return address;
  }

  private resolve(host: string): Promise<string | null> {
    return new Promise((resolve) => {
      this.lookup(host, { all: true }, (err, addresses) => {
        const first = Array.isArray(addresses) ? addresses[0]?.address : addresses;
        resolve(err || !first ? null : first);
      });
    });
  }
}

/** The address an IP-literal host names (a URL writes IPv6 in brackets), else null. */
function ipLiteral(hostname: string): string | null {
  if (hostname.startsWith('[') && hostname.endsWith(']')) return hostname.slice(1, -1);
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(hostname) ? hostname : null;
}
