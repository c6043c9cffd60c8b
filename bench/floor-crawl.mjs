/**
 * The floor of a polite crawl's CPU: the least a crawler in Node must do for
 * the same pages, with no queue, no Redis, no dedupe filter, no output. Used
 * by bench/polite-cpu.ts beside weir. Plain JavaScript (no TypeScript
 * loader), undici and htmlparser2 as weir uses them.
 *
 *   node bench/floor-crawl.mjs RATE PROCESSES ORIGIN...
 *
 * RATE: requests per second per site, or 0 for none (4 in flight a site,
 * weir's maxInFlightPerDomain in that bench). The origins are split among
 * PROCESSES child processes (as weir's sites among its workers); each
 * fetches its sites' robots.txt, then every page reachable from "/" by
 * same-origin links, each site's writes at least 1/RATE + 25 ms apart
 * (weir's send margin), timed on this process's own clock.
 *
 * FLOOR_IN_FLIGHT (default 4) sets the requests in flight a site when RATE
 * is 0, and FLOOR_START (default "/") the path each site's crawl starts
 * from: bench/cpu.ts runs it as weir runs there (8 in flight, /index.html).
 *
 * FLOOR_WARC=DIR: the floor of archiving too, the least a WARC of the crawl
 * takes: each exchange a request and a response record (WARC/1.1, the
 * request as written, the response's status line, headers and body), each
 * its own gzip member at level 1 as weir writes them, with SHA-1 block and
 * payload digests in base32 (node:crypto), written with one synchronous
 * write an exchange to a file of this process's own in DIR.
 */
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { Buffer } from 'node:buffer';
import { mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Parser } from 'htmlparser2';
import { Agent, request } from 'undici';

const MARGIN_MS = 25;
const [rateArg, procArg, ...origins] = process.argv.slice(2);
const rate = Number(rateArg);
const processes = Number(procArg);

if (process.env.FLOOR_CHILD === undefined) {
  const children = Array.from({ length: processes }, (_, p) => origins.filter((_, i) => i % processes === p));
  const codes = await Promise.all(
    children.map(
      (own) =>
        new Promise((resolve) => {
          const c = spawn(process.execPath, [process.argv[1], rateArg, '1', ...own], { stdio: 'inherit', env: { ...process.env, FLOOR_CHILD: '1' } });
          c.on('exit', resolve);
        }),
    ),
  );
  process.exit(codes.every((c) => c === 0) ? 0 : 1);
}

const inFlight = rate > 0 ? 1 : Number(process.env.FLOOR_IN_FLIGHT ?? 4);
const startPath = process.env.FLOOR_START ?? '/';
const agent = new Agent({ connections: Math.max(4, inFlight) });
const intervalMs = rate > 0 ? 1000 / rate + MARGIN_MS : 0;

const warcFd = process.env.FLOOR_WARC ? (mkdirSync(process.env.FLOOR_WARC, { recursive: true }), openSync(join(process.env.FLOOR_WARC, `floor-${process.pid}.warc.gz`), 'a')) : null;
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 of a 20-byte digest (no padding needed: 160 bits are 32 characters). */
function base32(bytes) {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out;
}

const sha1 = (bytes) => `sha1:${base32(createHash('sha1').update(bytes).digest())}`;

/** One WARC record as its own gzip member. */
function warcMember(type, url, date, id, concurrentTo, block, payload) {
  const head =
    `WARC/1.1\r\nWARC-Type: ${type}\r\nWARC-Record-ID: <urn:uuid:${id}>\r\nWARC-Date: ${date}\r\nWARC-Target-URI: ${url}\r\n` +
    `WARC-Concurrent-To: <urn:uuid:${concurrentTo}>\r\nContent-Type: application/http; msgtype=${type}\r\n` +
    `WARC-Block-Digest: ${sha1(block)}\r\n${payload ? `WARC-Payload-Digest: ${sha1(payload)}\r\n` : ''}Content-Length: ${block.length}\r\n\r\n`;
  return gzipSync(Buffer.concat([Buffer.from(head), block, Buffer.from('\r\n\r\n')]), { level: 1 });
}

/** The exchange archived: the request as undici would write it, the response as received. */
function archive(url, res, body) {
  const u = new URL(url);
  const date = new Date().toISOString();
  const [requestId, responseId] = [randomUUID(), randomUUID()];
  const requestBlock = Buffer.from(`GET ${u.pathname}${u.search} HTTP/1.1\r\nhost: ${u.host}\r\nconnection: keep-alive\r\n\r\n`);
  let head = `HTTP/1.1 ${res.statusCode} ${res.statusCode === 200 ? 'OK' : ''}\r\n`;
  for (const [k, v] of Object.entries(res.headers)) for (const one of Array.isArray(v) ? v : [v]) head += `${k}: ${one}\r\n`;
  const responseBlock = Buffer.concat([Buffer.from(`${head}\r\n`), body]);
  writeSync(warcFd, Buffer.concat([warcMember('request', url, date, requestId, responseId, requestBlock, null), warcMember('response', url, date, responseId, requestId, responseBlock, body)]));
}

function linksOf(html, base) {
  const out = [];
  const parser = new Parser({
    onopentag(name, attrs) {
      if (name === 'a' && attrs.href) {
        try {
          const u = new URL(attrs.href, base);
          u.hash = '';
          out.push(u.href);
        } catch {
          // not a URL: skipped
        }
      }
    },
  });
  parser.end(html);
  return out;
}

async function crawlSite(origin) {
  const seen = new Set([`${origin}${startPath}`]);
  const todo = [`${origin}/robots.txt`, `${origin}${startPath}`];
  let lastWrite = -Infinity;
  let active = 0;
  let pages = 0;
  await new Promise((resolve) => {
    const pump = () => {
      while (active < inFlight && todo.length > 0) {
        const url = todo.shift();
        active++;
        const wait = Math.max(0, lastWrite + intervalMs - performance.now());
        lastWrite = performance.now() + wait;
        setTimeout(async () => {
          try {
            const res = await request(url, { dispatcher: agent });
            let body;
            if (warcFd === null) body = await res.body.text();
            else {
              const bytes = Buffer.from(await res.body.arrayBuffer());
              archive(url, res, bytes);
              body = bytes.toString('utf8');
            }
            if (res.statusCode === 200 && !url.endsWith('/robots.txt')) {
              pages++;
              for (const l of linksOf(body, url)) {
                if (l.startsWith(`${origin}/`) && !seen.has(l)) {
                  seen.add(l);
                  todo.push(l);
                }
              }
            }
          } finally {
            active--;
            if (active === 0 && todo.length === 0) resolve();
            else pump();
          }
        }, wait);
      }
    };
    pump();
  });
  return pages;
}

await Promise.all(origins.map(crawlSite));
await agent.close();
