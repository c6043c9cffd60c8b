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
 */
import { spawn } from 'node:child_process';
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
            const body = await res.body.text();
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
