/**
 * The bundled demo web: four small sites on fixed loopback ports, linked to
 * each other, with robots.txt rules, a Crawl-delay, redirects, a few errors
 * and a slow site. Nothing leaves 127.0.0.1.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export const DEMO_PORTS = { news: 18081, shop: 18082, blog: 18083, docs: 18084 } as const;
type SiteName = keyof typeof DEMO_PORTS;

const origin = (s: SiteName): string => `http://127.0.0.1:${DEMO_PORTS[s]}`;
const page = (title: string, body: string): string =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`;
const link = (href: string, text: string): string => `<a href="${href}">${text}</a>`;

type Handler = (req: IncomingMessage, res: ServerResponse, n: number) => void | Promise<void>;

function html(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...headers });
  res.end(body);
}

const SITES: Record<SiteName, { robots: string; routes: (path: string) => Handler | null }> = {
  news: {
    robots: 'User-agent: *\nDisallow: /admin\n',
    routes: (path) => {
      if (path === '/') return (_q, r) => html(r, 200, page('News', Array.from({ length: 12 }, (_, i) => link(`/story/${i}`, `story ${i}`)).join(' ') + ` ${link('/admin', 'admin')} ${link(`${origin('shop')}/`, 'shop')} ${link('/old-front-page', 'old front page')}`));
      const m = /^\/story\/(\d+)$/.exec(path);
      if (m) {
        const n = Number(m[1]);
        if (n >= 12) return null;
        return (_q, r) => html(r, 200, page(`Story ${n}`, `${link(`/story/${(n + 1) % 12}`, 'next')} ${link(`${origin('blog')}/post/${n % 6}`, 'blog post')} ${link('#top', 'top')} ${link('/missing-story', 'broken link')}`));
      }
      if (path === '/old-front-page') return (_q, r) => {
        r.writeHead(301, { location: '/' });
        r.end();
      };
      return null;
    },
  },
  shop: {
    robots: 'User-agent: *\nCrawl-delay: 0.2\nDisallow: /cart\n',
    routes: (path) => {
      if (path === '/') return (_q, r) => html(r, 200, page('Shop', Array.from({ length: 10 }, (_, i) => link(`/item/${i}`, `item ${i}`)).join(' ') + ` ${link('/cart', 'cart')} ${link('/flaky', 'deals')} ${link(`${origin('docs')}/`, 'docs')}`));
      const m = /^\/item\/(\d+)$/.exec(path);
      if (m && Number(m[1]) < 10) return (_q, r) => html(r, 200, page(`Item ${m[1]}`, `${link('/', 'shop home')} ${link('/item-image.png', 'picture')}`));
      if (path === '/item-image.png') return (_q, r) => {
        r.writeHead(200, { 'content-type': 'image/png' });
        r.end(Buffer.alloc(2048));
      };
      // A transient failure: the first request of each run of the demo web fails.
      if (path === '/flaky') return (_q, r, n) => html(r, n === 1 ? 503 : 200, page('Deals', n === 1 ? 'try again' : link('/item/3', 'deal')));
      return null;
    },
  },
  blog: {
    robots: 'User-agent: *\nAllow: /\n',
    routes: (path) => {
      // A slow site: every page takes 300 ms.
      const slow = (body: string): Handler => async (_q, r) => {
        await new Promise((res) => setTimeout(res, 300));
        html(r, 200, body);
      };
      if (path === '/') return slow(page('Blog', Array.from({ length: 6 }, (_, i) => link(`/post/${i}`, `post ${i}`)).join(' ')));
      const m = /^\/post\/(\d+)$/.exec(path);
      if (m && Number(m[1]) < 6) return slow(page(`Post ${m[1]}`, `${link('/', 'blog')} ${link(`${origin('news')}/story/${m[1]}`, 'in the news')}`));
      return null;
    },
  },
  docs: {
    robots: 'User-agent: *\nDisallow: /private/\n\nUser-agent: weir\nDisallow: /private/\nAllow: /private/readme\n',
    routes: (path) => {
      if (path === '/') return (_q, r) => html(r, 200, page('Docs', Array.from({ length: 8 }, (_, i) => link(`/guide/${i}`, `guide ${i}`)).join(' ') + ` ${link('/private/secret', 'secret')} ${link('/private/readme', 'readme')} ${link('/v1', 'old docs')}`));
      const m = /^\/guide\/(\d+)$/.exec(path);
      if (m && Number(m[1]) < 8) return (_q, r) => html(r, 200, page(`Guide ${m[1]}`, `${link('../', 'docs home')} ${link('/api.json', 'API schema')}`));
      if (path === '/api.json') return (_q, r) => {
        r.writeHead(200, { 'content-type': 'application/json' });
        r.end('{"api": true}');
      };
      if (path === '/private/readme') return (_q, r) => html(r, 200, page('Readme', 'allowed for weir'));
      if (path === '/v1') return (_q, r) => {
        r.writeHead(302, { location: '/v2' });
        r.end();
      };
      if (path === '/v2') return (_q, r) => {
        r.writeHead(301, { location: '/' });
        r.end();
      };
      return null;
    },
  },
};

/**
 * URLs a crawl of the demo web finishes (one output line each): news 16
 * (home, 12 stories, /admin skipped by robots.txt, a redirect, a 404), shop
 * 14 (home, 10 items, /cart skipped, /flaky after one 503, a PNG), blog 7,
 * docs 14 (home, 8 guides, /private/secret skipped, /private/readme, two
 * redirects, a JSON file).
 */
export const DEMO_EXPECTED_URLS = 51;

export interface DemoWeb {
  origins: Record<SiteName, string>;
  close(): Promise<void>;
}

export async function startDemoWeb(): Promise<DemoWeb> {
  const servers: Server[] = [];
  for (const name of Object.keys(SITES) as SiteName[]) {
    const site = SITES[name];
    const counts = new Map<string, number>();
    const server = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const n = (counts.get(path) ?? 0) + 1;
      counts.set(path, n);
      if (path === '/robots.txt') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(site.robots);
        return;
      }
      const h = site.routes(path);
      if (!h) return html(res, 404, page('Not found', ''));
      void h(req, res, n);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) =>
        reject(new Error(err.code === 'EADDRINUSE' ? `demo port ${DEMO_PORTS[name]} is in use (another demo running?)` : err.message)),
      );
      server.listen(DEMO_PORTS[name], '127.0.0.1', () => resolve());
    });
    servers.push(server);
  }
  return {
    origins: { news: origin('news'), shop: origin('shop'), blog: origin('blog'), docs: origin('docs') },
    close: async () => {
      for (const s of servers) {
        s.closeAllConnections();
        await new Promise((r) => s.close(r));
      }
    },
  };
}
