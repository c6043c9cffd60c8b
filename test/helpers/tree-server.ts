/**
 * A tree site (see treeSite) in its own process, so the arrival times it
 * records are not delayed by whatever the test process is doing (spawning
 * workers, say). Protocol over IPC: it sends {port} when listening; send it
 * 'log' and it answers with its request log [{path, at}].
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { treeSite } from './web.js';

const pages = Number(process.argv[2] ?? 100);
const handler = treeSite(pages);
const log: { path: string; at: number }[] = [];
const server = createServer((req, res) => {
  log.push({ path: req.url ?? '/', at: performance.now() });
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
