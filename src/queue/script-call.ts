/**
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
import { Command } from 'ioredis';
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
