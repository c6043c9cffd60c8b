/**
 * Script calls as they go onto the wire.
 *
 * A script call of many arguments written to the socket as one Buffer.
 *
 * ioredis turns each argument into a string and concatenates the whole
 * command as a string, several short-lived strings per argument: for an
 * enqueue of 1,000 URLs with their Bloom positions (some 9,000 arguments)
 * that was about 2 MB of garbage a call, and a fifth of a kickoff's CPU.
 * Here the arguments after the keys are encoded once, straight into one
 * Buffer (numbers digit by digit, strings by a single copy each). The
 * command keeps its name and keys as ioredis knows them, so a Cluster
 * routes it by its keys' slot and a key prefix applies as usual.
 */
import { Cluster, Command, type Redis } from 'ioredis';
import type { RedisClient } from './types.js';

const CRLF_0 = 0x0d;
const CRLF_1 = 0x0a;

/** Decimal digits of a non-negative safe integer. */
function digitCount(n: number): number {
  let d = 1;
  while (n >= 10) {
    n = Math.floor(n / 10);
    d++;
  }
  return d;
}

/** Writes a non-negative safe integer's digits at `at`; returns the offset after them. */
function writeDigits(buf: Buffer, n: number, at: number): number {
  const end = at + digitCount(n);
  let i = end;
  do {
    buf[--i] = 0x30 + (n % 10);
    n = Math.floor(n / 10);
  } while (n > 0);
  return end;
}

/** An argument of a script call: a number, text (sent as UTF-8), or bytes as they are. */
export type ScriptArg = string | number | Buffer;

const plainInt = (v: ScriptArg): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** RESP bulk strings of `args` (as ioredis would send them: a number as String(n)), in one Buffer, after `headBytes` bytes left for the caller. */
function encodeBulk(args: readonly ScriptArg[], headBytes: number): Buffer {
  const sizes = new Array<number>(args.length);
  let total = headBytes;
  for (let i = 0; i < args.length; i++) {
    const v = args[i] as ScriptArg;
    const size = plainInt(v) ? digitCount(v) : typeof v === 'object' ? v.length : Buffer.byteLength(typeof v === 'string' ? v : String(v));
    sizes[i] = size;
    // $<size>\r\n<bytes>\r\n
    total += 1 + digitCount(size) + 2 + size + 2;
  }
  const buf = Buffer.allocUnsafe(total);
  let at = headBytes;
  for (let i = 0; i < args.length; i++) {
    const v = args[i] as ScriptArg;
    const size = sizes[i] as number;
    buf[at++] = 0x24; // '$'
    at = writeDigits(buf, size, at);
    buf[at++] = CRLF_0;
    buf[at++] = CRLF_1;
    if (plainInt(v)) at = writeDigits(buf, v, at);
    else if (typeof v === 'object') at += v.copy(buf, at);
    else at += buf.write(typeof v === 'string' ? v : String(v), at);
    buf[at++] = CRLF_0;
    buf[at++] = CRLF_1;
  }
  return buf;
}

/** A command whose arguments after `head` (its name's own, the keys among them) are sent as encoded bytes. */
export class EncodedCommand extends Command {
  private readonly encoded: Buffer;

  /** `keyPrefix`: the client's own (ioredis puts it before each key of the head). */
  constructor(name: string, head: (string | number)[], tail: readonly ScriptArg[], options: { keyPrefix?: string | undefined } = {}) {
    // (Replies as strings, as ioredis's own commands give them.)
    super(name, head, { replyEncoding: 'utf8', ...(options.keyPrefix ? { keyPrefix: options.keyPrefix } : {}) });
    // (this.args is the head as ioredis left it: a key prefix applied.)
    const parts = [`*${this.args.length + 1 + tail.length}\r\n`, `$${Buffer.byteLength(name)}\r\n${name}\r\n`];
    for (const a of this.args) {
      const s = typeof a === 'string' ? a : String(a as number);
      parts.push(`$${Buffer.byteLength(s)}\r\n${s}\r\n`);
    }
    const headText = parts.join('');
    const headBytes = Buffer.byteLength(headText);
    this.encoded = encodeBulk(tail, headBytes);
    this.encoded.write(headText, 0);
  }

  override toWritable(): Buffer {
    return this.encoded;
  }
}

/** Sends `name head… tail…` on `client` as an EncodedCommand (with the client's key prefix); resolves its reply. */
export function sendEncoded(client: RedisClient, name: string, head: (string | number)[], tail: readonly ScriptArg[]): Promise<unknown> {
  const command = new EncodedCommand(name, head, tail, { keyPrefix: client.options.keyPrefix });
  void client.sendCommand(command);
  return command.promise;
}

/*
 * Script calls whose reply nobody reads, sent on a connection that gets none
 * (OneWayCalls).
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
