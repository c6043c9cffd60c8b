import type { RedisClient } from '../../queue/index.js';

/**
 * Claims a place for each name in the set of domains a crawl created by
 * following links, while it holds fewer than `max`: one script, so two
 * workers racing for the last place cannot both get it, and a name already
 * there is granted again at no cost. Replies per name: 2 claimed now, 1
 * already there, 0 refused (the set is full). The loop runs once per name
 * of the call (at most CLAIMS_PER_CALL).
 */
const CLAIM_SCRIPT = `
local max = tonumber(ARGV[1])
local n = redis.call('SCARD', KEYS[1])
local out = {}
for i = 2, #ARGV do
  if redis.call('SISMEMBER', KEYS[1], ARGV[i]) == 1 then
    out[i - 1] = 1
  elseif n < max then
    redis.call('SADD', KEYS[1], ARGV[i])
    n = n + 1
    out[i - 1] = 2
  else
    out[i - 1] = 0
  end
end
return out
`;

const CLAIMS_PER_CALL = 1000;
/** Answers a worker remembers, of each kind; past this many it forgets them and asks again (an ask is idempotent). */
const REMEMBERED_MAX = 100_000;

function remember(set: Set<string>, name: string): void {
  if (set.size >= REMEMBERED_MAX) set.clear();
  set.add(name);
}

export interface ClaimResult {
  /** Names that may be used (created now or before). */
  granted: Set<string>;
  /** Of those, the ones this call added to the set. */
  created: number;
  /** Names refused: the crawl has its maxDomains. */
  refused: number;
}

/**
 * otherDomains.maxDomains, exact across every worker: a domain the seed
 * does not list gets a queue only after it is granted a place here. Names
 * are never removed, so an answer never changes: a name granted stays
 * granted, and one refused (the set was full) stays refused. Each worker
 * remembers its answers and asks only about names it has not asked about.
 */
export class DomainClaims {
  private readonly known = new Set<string>();
  private readonly refusedNames = new Set<string>();

  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
    private readonly max: number,
  ) {}

  async claim(names: Iterable<string>): Promise<ClaimResult> {
    const granted = new Set<string>();
    const ask: string[] = [];
    let created = 0;
    let refused = 0;
    for (const name of new Set(names)) {
      if (this.known.has(name)) granted.add(name);
      else if (this.refusedNames.has(name)) refused++;
      else ask.push(name);
    }
    for (let i = 0; i < ask.length; i += CLAIMS_PER_CALL) {
      const chunk = ask.slice(i, i + CLAIMS_PER_CALL);
      const replies = (await this.redis.eval(CLAIM_SCRIPT, 1, this.key, this.max, ...chunk)) as number[];
      chunk.forEach((name, j) => {
        const r = replies[j];
        if (r === 0) {
          refused++;
          remember(this.refusedNames, name);
          return;
        }
        if (r === 2) created++;
        granted.add(name);
        remember(this.known, name);
      });
    }
    return { granted, created, refused };
  }

  /** Domains claimed so far, across every worker. */
  async count(): Promise<number> {
    return this.redis.scard(this.key);
  }
}
