/**
 * The seed design's leaky-bucket scripts (../shared/seeds/000_d8c3cb4c6886c86e.txt,
 * "redis_leaky_bucket.py"), run as written: the same Lua text, the same
 * arguments (the caller's clock in ms, a uuid per dequeue, a reservation in
 * seconds), only called from Node instead of Python. A baseline contender for
 * the benchmarks, never part of weir.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

const ENQUEUE = `
if #ARGV < 3 then
    return error("USAGE: arena queue payload")
end
local arena_name = ARGV[1]
local queue_name = ARGV[2]
local payload = ARGV[3]
local rate_queues = arena_name .. ":queues"
local queue_name = arena_name .. ":" .. queue_name
local queue_length = redis.call('RPUSH', queue_name, payload)
if queue_length == 1 then
   redis.call('ZADD', rate_queues, 0, queue_name)
end
return queue_length
`;

const DEQUEUE = `
if #ARGV < 4 then
    return error("USAGE: arena current_time txnid reservation_duration")
end
local arena_name = ARGV[1]
local current_time = ARGV[2]
local txnid = ARGV[3]
local reservation_duration = ARGV[4]
local rate_queues = arena_name .. ":queues"
while true do
    local queue_names = redis.call("ZRANGEBYSCORE", rate_queues, 0, current_time, "LIMIT", 0, 1)
    if #queue_names == 0 then
        return false
    end
    local queue_name = queue_names[1]
    local item = redis.call("LPOP", queue_name)
    if item == false then
        redis.call("ZREM", rate_queues, queue_name)
    else
        local rate_delay = (1000 / redis.call("HGET", "rate_limits", queue_name))
        redis.call("ZADD", rate_queues, current_time + rate_delay, queue_name)
        redis.call("HMSET", "txn:" .. txnid, "data", item, "queue_name", queue_name)
        redis.call("ZADD", "transactions", current_time + reservation_duration, txnid)
        return item
    end
end
`;

const COMMIT = `
if #ARGV < 1 then
    return error("USAGE: txnid")
end
local txnid = ARGV[1]
redis.call("DEL", "txn:" .. txnid)
return redis.call("ZREM", "transactions", txnid)
`;

interface SeedCommands {
  seedEnqueue(arena: string, queue: string, payload: string): Promise<number>;
  seedDequeue(arena: string, now: number, txnid: string, reservation: number): Promise<string | null>;
  seedCommit(txnid: string): Promise<number>;
}

export class SeedDesignQueue {
  private readonly c: Redis & SeedCommands;

  constructor(client: Redis) {
    client.defineCommand('seedEnqueue', { numberOfKeys: 0, lua: ENQUEUE });
    client.defineCommand('seedDequeue', { numberOfKeys: 0, lua: DEQUEUE });
    client.defineCommand('seedCommit', { numberOfKeys: 0, lua: COMMIT });
    this.c = client as Redis & SeedCommands;
  }

  /** define_rate_limits: { queue -> calls per second }. */
  async defineRateLimits(arena: string, limits: Record<string, number>): Promise<void> {
    await this.c.hset('rate_limits', Object.fromEntries(Object.entries(limits).map(([k, v]) => [`${arena}:${k}`, String(v)])));
  }

  enqueue(arena: string, queue: string, payload: string): Promise<number> {
    return this.c.seedEnqueue(arena, queue, JSON.stringify(payload));
  }

  /** One dequeue as the seed's worker calls it: its own clock in ms; null for QueueEmpty. */
  async dequeue(arena: string, reservationSeconds = 10): Promise<{ item: string; txnid: string; at: number } | null> {
    const txnid = randomUUID().replaceAll('-', '');
    const at = Date.now();
    const item = await this.c.seedDequeue(arena, at, txnid, reservationSeconds);
    return item === null ? null : { item: JSON.parse(item) as string, txnid, at };
  }

  commit(txnid: string): Promise<number> {
    return this.c.seedCommit(txnid);
  }
}
