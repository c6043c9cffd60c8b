import type { ChainableCommander } from 'ioredis';

/** Amounts to add, by hash key, then by field. */
export type FieldAdds = Map<string, Map<string, number>>;

/**
 * Adds to integer fields of hashes in one script call, an HINCRBY a field
 * inside it (a worker's counters and history touch every busy domain each
 * second: one call, not a command a field). Atomic like the HINCRBYs it
 * replaces. A field that holds no integer (written by hand, say) is set to
 * the amount, as reading it as 0 would. An HMGET and an HSET of the whole
 * batch, each value read with tonumber and written with string.format,
 * cost twice the Redis instructions: 14,451 a field against 7,989, a flush
 * of 620 fields of a 910-field hash counted under callgrind
 * (`BENCH_PART=redis-count npm run bench:crawl`, docs/benchmarks.md).
 * KEYS: the hashes; ARGV: per key its field count, then field, amount
 * pairs.
 */
const ADD_FIELDS = `
local a = 1
for i = 1, #KEYS do
  local key = KEYS[i]
  for _ = 1, tonumber(ARGV[a]) do
    if type(redis.pcall('HINCRBY', key, ARGV[a + 1], ARGV[a + 2])) == 'table' then
      redis.call('HSET', key, ARGV[a + 1], ARGV[a + 2])
    end
    a = a + 2
  end
  a = a + 1
end
return 1
`;

/** Queues the adds on `p` as one script call (nothing when there are none). Amounts are sent as whole numbers (HINCRBY takes no other); one that is not finite is left out. */
export function addFields(p: ChainableCommander, adds: FieldAdds): void {
  const keys: string[] = [];
  const args: (string | number)[] = [];
  for (const [key, fields] of adds) {
    // (Its count first, filled in after its pairs: no copy of them, nor a
    // spread of thousands of arguments into one push.)
    const at = args.push(0) - 1;
    for (const [field, n] of fields) if (Number.isFinite(n)) args.push(field, Math.round(n));
    const count = (args.length - at - 1) / 2;
    if (count === 0) {
      args.length = at;
      continue;
    }
    args[at] = count;
    keys.push(key);
  }
  if (keys.length > 0) p.eval(ADD_FIELDS, keys.length, ...keys, ...args);
}

/** Adds `n` to field `field` of `key` in `adds`. */
export function addTo(adds: FieldAdds, key: string, field: string, n: number): void {
  let fields = adds.get(key);
  if (!fields) adds.set(key, (fields = new Map<string, number>()));
  fields.set(field, (fields.get(field) ?? 0) + n);
}
