import type { ChainableCommander } from 'ioredis';

/** Amounts to add, by hash key, then by field. */
export type FieldAdds = Map<string, Map<string, number>>;

/** Fields one HMGET/HSET pair takes at most (well inside Lua's unpack limit). */
const SLICE = 1000;

/**
 * Adds to integer fields of hashes in one script call: per hash one HMGET
 * and one HSET of all its fields, where an HINCRBY each would be a command
 * per field (a worker's counters and history touch every busy domain each
 * second). Atomic like the HINCRBYs it replaces. KEYS: the hashes; ARGV: per
 * key its field count, then field, amount pairs.
 */
const ADD_FIELDS = `
local a = 1
for i = 1, #KEYS do
  local n = tonumber(ARGV[a])
  a = a + 1
  for from = 0, n - 1, ${SLICE} do
    local fields, adds = {}, {}
    for j = 1, math.min(${SLICE}, n - from) do
      fields[j] = ARGV[a]
      adds[j] = tonumber(ARGV[a + 1])
      a = a + 2
    end
    local now = redis.call('HMGET', KEYS[i], unpack(fields))
    local out = {}
    for j = 1, #fields do
      out[#out + 1] = fields[j]
      out[#out + 1] = string.format('%.0f', (tonumber(now[j]) or 0) + adds[j])
    end
    redis.call('HSET', KEYS[i], unpack(out))
  end
end
return 1
`;

/** Queues the adds on `p` as one script call (nothing when there are none). */
export function addFields(p: ChainableCommander, adds: FieldAdds): void {
  const keys: string[] = [];
  const args: (string | number)[] = [];
  for (const [key, fields] of adds) {
    if (fields.size === 0) continue;
    keys.push(key);
    args.push(fields.size);
    for (const [field, n] of fields) args.push(field, n);
  }
  if (keys.length > 0) p.eval(ADD_FIELDS, keys.length, ...keys, ...args);
}

/** Adds `n` to field `field` of `key` in `adds`. */
export function addTo(adds: FieldAdds, key: string, field: string, n: number): void {
  let fields = adds.get(key);
  if (!fields) adds.set(key, (fields = new Map<string, number>()));
  fields.set(field, (fields.get(field) ?? 0) + n);
}
