/**
 * A tree site (see treeSite) in its own process, so the arrival times it
 * records are not delayed by whatever the test process is doing (spawning
 * workers, say). Protocol over IPC: it sends {port} when listening; send it
 * 'log' and it answers with its request log [{path, at, lag}].
 *
 * Its own precision is measured too: a timer ticks every millisecond, and
 * each arrival records `lag`, the time since the tick before last (less the 2 ms of two ticks). A request that
 * came while this process was stalled (seen here: up to 17 ms on two cores
 * shared with Redis and a worker starting every second, even at a raised
 * priority) is stamped when the stall ends, up to `lag` ms after it arrived.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { treeSite } from './web.js';

const pages = Number(process.argv[2] ?? 100);
const handler = treeSite(pages);
const log: { path: string; at: number; lag: number }[] = [];
// After a stall the timer phase runs before the I/O that waited, so the tick
// before last is the one that tells when the stall began.
let lastTick = performance.now();
let prevTick = lastTick;
setInterval(() => {
  prevTick = lastTick;
  lastTick = performance.now();
}, 1);
const server = createServer((req, res) => {
  const at = performance.now();
  log.push({ path: req.url ?? '/', at, lag: Math.max(0, at - prevTick - 2) });
  if (req.url === '/robots.txt') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('User-agent: *\nAllow: /\n');
    return;
  }
  void handler(req, res, { site: undefined as never, count: 0 });
});
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
process.on('message', (m) => {
  if (m === 'log') process.send?.({ log });
  if (m === 'exit') server.close(() => process.exit(0));
});
