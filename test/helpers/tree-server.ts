/**
 * A tree site (see treeSite) in its own process, so the arrival times it
 * records are not delayed by whatever the test process is doing (spawning
 * workers, say). Protocol over IPC (stamps.ts): it sends {port} when
 * listening; send it 'log' and it answers with its request log [{path, at,
 * lag}], its own stamping lag measured.
 */
import { createServer } from 'node:http';
import { arrivalLog, serveOverIpc } from './stamps.js';
import { treeSite } from './web.js';

const pages = Number(process.argv[2] ?? 100);
const handler = treeSite(pages);
const { log, stamp } = arrivalLog();
const server = createServer((req, res) => {
  stamp(req.url ?? '/');
  if (req.url === '/robots.txt') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('User-agent: *\nAllow: /\n');
    return;
  }
  void handler(req, res, { site: undefined as never, count: 0 });
});
serveOverIpc(server, log);
