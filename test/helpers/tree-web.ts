/**
 * Tree sites (see treeSite), each on its own port, served by one child
 * process at a raised priority: the judge of a test that runs sites while
 * the test process itself is busy (a Redis Cluster's clients, worker
 * processes spawned and killed). In the test process, a site stamping
 * arrivals was seen stalled 40 ms under load and stamping two requests
 * that arrived ~50 ms apart 2 ms apart: its measured lag (stamps.ts) keeps
 * such a judgement honest but makes it one the site cannot vouch for.
 *
 * TreeWeb is the test's handle; the child's side is at the end of the file.
 * Requests over IPC carry an id; the child answers each with the same id.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setPriority } from 'node:os';
import { stampClock } from './stamps.js';
import { treeSite, type RecordedRequest } from './web.js';

type Ask = { add: string; pages: number } | { drop: string } | { counts: true } | { log: true };
interface Counts {
  requests: number;
  /** Requests other than robots.txt. */
  pages: number;
  /** Sites that were asked for robots.txt. */
  robotsSites: number;
  /** When the child answered, by its clock (the one its stamps use). */
  at: number;
}

export class TreeWeb {
  private nextId = 0;
  private readonly waiting = new Map<number, (answer: unknown) => void>();

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (m: { id: number; answer: unknown }) => {
      this.waiting.get(m.id)?.(m.answer);
      this.waiting.delete(m.id);
    });
  }

  static async start(): Promise<TreeWeb> {
    const child = fork(new URL(import.meta.url).pathname, ['--tree-web'], { execArgv: ['--import', 'tsx'], stdio: 'ignore' });
    await new Promise((r) => child.once('message', r));
    try {
      if (child.pid !== undefined) setPriority(child.pid, -10);
    } catch {
      // not permitted: its measured lag still keeps the judging honest
    }
    return new TreeWeb(child);
  }

  private ask<T>(what: Ask): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve) => {
      this.waiting.set(id, resolve as (answer: unknown) => void);
      this.child.send({ id, what });
    });
  }

  /** A tree site of `pages` pages (robots.txt allows all); its domain key, "127.0.0.1:<port>". */
  async add(name: string, pages: number): Promise<string> {
    const port = await this.ask<number>({ add: name, pages });
    return `127.0.0.1:${port}`;
  }

  /** Closes a site added by mistake. */
  drop(name: string): Promise<void> {
    return this.ask({ drop: name });
  }

  counts(): Promise<Counts> {
    return this.ask({ counts: true });
  }

  /** Every request the sites saw, in arrival order, stamped by the child's clock. */
  log(): Promise<RecordedRequest[]> {
    return this.ask({ log: true });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.child.exitCode !== null) return resolve();
      this.child.once('exit', () => resolve());
      this.child.kill();
    });
  }
}

/** The child: serves the sites asked for, stamping every arrival. */
function serveTreeWeb(): void {
  const clock = stampClock();
  const log: RecordedRequest[] = [];
  const servers = new Map<string, Server>();
  const answer = async (what: Ask): Promise<unknown> => {
    if ('add' in what) {
      const name = what.add;
      const handler = treeSite(what.pages);
      const server = createServer((req, res) => {
        const path = req.url ?? '/';
        log.push({ site: name, path, ...clock.stamp(), userAgent: '' });
        if (path === '/robots.txt') {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.end('User-agent: *\nAllow: /\n');
          return;
        }
        void handler(req, res, { site: undefined as never, count: 0 });
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      servers.set(name, server);
      return (server.address() as AddressInfo).port;
    }
    if ('drop' in what) {
      servers.get(what.drop)?.close();
      servers.delete(what.drop);
      return null;
    }
    if ('counts' in what) {
      const pages = log.filter((r) => r.path !== '/robots.txt');
      return { requests: log.length, pages: pages.length, robotsSites: new Set(log.filter((r) => r.path === '/robots.txt').map((r) => r.site)).size, at: performance.now() } satisfies Counts;
    }
    return log;
  };
  process.on('message', (m: { id: number; what: Ask }) => {
    void answer(m.what).then((a) => process.send?.({ id: m.id, answer: a }));
  });
  process.on('disconnect', () => process.exit(0));
  process.send?.('ready');
}

if (process.send && process.argv[2] === '--tree-web') serveTreeWeb();
