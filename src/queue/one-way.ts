/**
 * Script calls whose reply nobody reads, sent on a connection that gets none.
 *
 * A polite crawl reports every rate-limited request's send (sent.lua) and
 * never awaits the answer: a lost report only holds the queue's next slot
 * to its send window's end. Its reply still came back, and reading it woke
 * the worker once a page for nothing (some 0.2-0.4 ms of CPU a wake on a
 * small machine). Such calls go instead on a connection of their own to
 * the node (a duplicate of the caller's client: the same address, password,
 * TLS and database) that has said `CLIENT REPLY OFF`, so that Redis sends
 * nothing back. ioredis never sees these calls; they are written to its
 * socket whole.
 *
 * Nothing depends on the silence but the saving: the calls run whatever
 * their connection's reply mode. A server, proxy or ACL that refuses
 * CLIENT REPLY answers, and a link that gets any reply is closed and its
 * node's calls go the ordinary way from then on. A link that drops loses
 * what was in flight on it (as a lost report may be) and is made again on
 * a later call, not sooner than a second after. On a Cluster the call goes
 * to the master ioredis knows for its keys' slot; a slot that moved loses
 * the call (its MOVED is not answered either).
 */
import { Cluster, type Redis } from 'ioredis';
import { EncodedCommand, type ScriptArg } from './script-call.js';
import type { RedisClient } from './types.js';

const REPLY_OFF = Buffer.from('*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nOFF\r\n');
/** A link that dropped is not made again sooner than this after. */
const RELINK_AFTER_MS = 1000;

interface Link {
  readonly conn: Redis;
  quiet: boolean;
}

export class OneWayCalls {
  /** Per node ('host:port'; '' for a single Redis): its link. */
  private readonly links = new Map<string, Link>();
  /** Nodes that answered on their link: their calls go the ordinary way. */
  private readonly replying = new Set<string>();
  /** When each node's last link dropped (ms, this process's clock). */
  private readonly dropped = new Map<string, number>();
  private closed = false;

  constructor(private readonly client: RedisClient) {}

  /**
   * Writes `FCALL <fn> <keys…> <args…>` on a link that gets no reply; false
   * (nothing sent) when there is none ready, and the caller sends it the
   * ordinary way.
   */
  send(fn: string, keys: readonly string[], args: readonly ScriptArg[]): boolean {
    const node = this.nodeFor(keys[0]);
    if (!node) return false;
    const link = this.linkTo(node.key, node.redis);
    const stream = link?.quiet ? (link.conn.stream as (typeof link.conn.stream & { writable?: boolean }) | undefined) : undefined;
    if (!stream?.writable) return false;
    const command = new EncodedCommand('FCALL', [fn, keys.length, ...keys], args, { keyPrefix: this.client.options.keyPrefix });
    stream.write(command.toWritable());
    return true;
  }

  /** Closes the links. */
  close(): void {
    this.closed = true;
    for (const link of this.links.values()) link.conn.disconnect();
    this.links.clear();
  }

  /** `key`'s link, made if there is none and may be; null while it may not. */
  private linkTo(key: string, redis: Redis): Link | null {
    const known = this.links.get(key);
    if (known) return known;
    if (this.closed || this.replying.has(key) || performance.now() - (this.dropped.get(key) ?? -Infinity) < RELINK_AFTER_MS) return null;
    // (No reconnecting of its own and no offline queue: a dropped link is made anew, later.)
    const conn = redis.duplicate({ lazyConnect: false, enableOfflineQueue: false, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    const link: Link = { conn, quiet: false };
    this.links.set(key, link);
    conn.on('ready', () => {
      conn.stream.write(REPLY_OFF);
      // (It must not keep a finished process alive.)
      conn.stream.unref();
      link.quiet = true;
    });
    conn.on('error', (err: Error) => {
      // A reply came on a link that asked for none: ioredis has no command to pair it with.
      if (err.message.startsWith('Command queue state error')) {
        this.replying.add(key);
        conn.disconnect();
      }
    });
    conn.on('end', () => {
      link.quiet = false;
      if (this.links.get(key) === link) this.links.delete(key);
      this.dropped.set(key, performance.now());
    });
    return link;
  }

  /** The node a call on `key` goes to: the client's, or on a Cluster the master ioredis has for the key's slot. */
  private nodeFor(key: string | undefined): { key: string; redis: Redis } | null {
    if (!(this.client instanceof Cluster)) return { key: '', redis: this.client };
    if (key === undefined) return null;
    const owner = (this.client as unknown as { slots: (string[] | undefined)[] }).slots[clusterSlot((this.client.options.keyPrefix ?? '') + key)]?.[0];
    if (owner === undefined) return null;
    const redis = this.client.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === owner);
    return redis ? { key: owner, redis } : null;
  }
}

/** CRC16-CCITT (XModem), as Redis Cluster hashes keys. */
function crc16(bytes: Buffer): number {
  let crc = 0;
  for (const b of bytes) {
    crc ^= b << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** A key's Cluster slot: its hash tag's ({…}) when it has a non-empty one. */
export function clusterSlot(key: string): number {
  const open = key.indexOf('{');
  if (open !== -1) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  return crc16(Buffer.from(key)) % 16384;
}
