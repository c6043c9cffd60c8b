/**
 * Redis over TLS (rediss://): a redis-server with a TLS port only, a CA the
 * test makes with openssl, trusted by weir through NODE_EXTRA_CA_CERTS.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../helpers/redis.js';
import { FixtureWeb, html } from '../helpers/web.js';

const run = promisify(execFile);
const ROOT = new URL('../../', import.meta.url).pathname;
let dir: string;
let port: number;
let redis: ChildProcess;
let web: FixtureWeb;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'weir-tls-'));
  const o = (...a: string[]) => run('openssl', a, { cwd: dir });
  await o('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=weir test CA');
  await o('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  await writeFile(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  await o('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'san.ext');
  port = await freePort();
  redis = spawn('redis-server', ['--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1', '--tls-cert-file', 'server.crt', '--tls-key-file', 'server.key', '--tls-ca-cert-file', 'ca.crt', '--tls-auth-clients', 'no', '--save', '', '--appendonly', 'no', '--dir', dir], { cwd: dir, stdio: 'ignore' });
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const { stdout } = await run('redis-cli', ['--tls', '--cacert', join(dir, 'ca.crt'), '-h', '127.0.0.1', '-p', String(port), 'ping']);
      if (stdout.trim() === 'PONG') break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error('redis-server with TLS did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  web = new FixtureWeb();
  await web.site('T', { '/robots.txt': 'User-agent: *\nAllow: /\n', '/': html('<a href="/a">a</a><a href="/b">b</a>'), '/a': html('a'), '/b': html('b') });
});

after(async () => {
  redis.kill('SIGKILL');
  await web.close();
  await rm(dir, { recursive: true, force: true });
});

describe('Redis over TLS', () => {
  it('kickoff and a worker run against rediss://', async () => {
    const T = web.sites.get('T');
    assert.ok(T);
    const seed = join(dir, 'tls.yaml');
    await writeFile(seed, `arena: tls\nrateLimits:\n  "${T.key}": unlimited\nstart: ["${T.origin}/"]\nallowPrivateNetworks: true\n`);
    const weir = (args: string[]): Promise<{ code: unknown; out: string }> =>
      new Promise((res) => {
        const p = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli.ts'), ...args, '--redis', `rediss://127.0.0.1:${port}`], {
          stdio: ['ignore', 'pipe', 'pipe'],
          env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'ca.crt'), WEIR_LOG_LEVEL: 'warn' },
        });
        let out = '';
        p.stdout.on('data', (d: Buffer) => (out += d.toString()));
        p.stderr.on('data', (d: Buffer) => (out += d.toString()));
        p.on('exit', (code) => res({ code, out }));
      });
    const k = await weir(['kickoff', seed]);
    assert.equal(k.code, 0, k.out);
    const w = await weir(['worker', seed, '--exit-when-done', '--out', join(dir, 'tls.jsonl')]);
    assert.equal(w.code, 0, w.out);
    assert.equal((await readFile(join(dir, 'tls.jsonl'), 'utf8')).trim().split('\n').length, 3);
  });
});
