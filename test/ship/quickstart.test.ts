/**
 * The README's quick start on a fresh copy of the repository: no .weir/, no
 * node_modules, and nothing listening at the default Redis address (an
 * environment override points it at a free port), so the embedded Redis is
 * really started. Then the demo again: a fresh arena, crawled again.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { DEMO_EXPECTED_URLS } from '../../src/demo/web.js';
import { freePort } from '../helpers/redis.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'weir-quickstart-'));

function sh(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

after(async () => {
  // Stop the embedded Redis the demo started, then remove the copy.
  await sh(process.execPath, ['dist/cli.js', 'redis-stop'], process.env);
  rmSync(work, { recursive: true, force: true });
});

describe('quick start', () => {
  it('npm ci, then npm run demo twice, on a fresh copy with no Redis at the default address', async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const block = /## Quick start[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    const commands = block.split('\n').map((l) => l.replace(/#.*$/, '').trim()).filter(Boolean);
    assert.deepEqual(commands, ['npm ci', 'npm run demo'], 'the README quick start is these two commands');

    // The repository as git sees it (tracked and new files), without .weir/ or node_modules.
    const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
    for (const f of files) {
      if (f.startsWith('.weir/') || f.startsWith('node_modules/')) continue;
      mkdirSync(dirname(join(work, f)), { recursive: true });
      try {
        cpSync(join(ROOT, f), join(work, f));
      } catch {
        // deleted in the working tree but still tracked: skip
      }
    }
    const env: NodeJS.ProcessEnv = { ...process.env, WEIR_DEFAULT_REDIS: `redis://127.0.0.1:${await freePort()}` };
    delete env.REDIS_URL;
    delete env.WEIR_LOG_LEVEL;

    const install = await sh('npm', ['ci', '--no-audit', '--no-fund'], env);
    assert.equal(install.code, 0, install.stderr.slice(-2000));

    const arenas: string[] = [];
    for (let run = 0; run < 2; run++) {
      const demo = await sh('npm', ['run', 'demo'], env);
      assert.equal(demo.code, 0, `${demo.stdout}\n${demo.stderr}`.slice(-3000));
      assert.match(demo.stdout, run === 0 ? /embedded, started now/ : /embedded, already running/);
      assert.match(demo.stdout, /crawl of (demo-\S+) finished in/);
      assert.match(demo.stdout, /domain\s+pages\s+errors\s+robots\s+dead\s+limit\s+achieved/);
      assert.match(demo.stdout, /total: 45 pages, 1 errors, 0 dead-lettered, 0 still queued/);
      arenas.push(/crawl of (demo-\S+) finished/.exec(demo.stdout)?.[1] ?? '');
      const lines = readFileSync(join(work, '.weir', 'demo-output.jsonl'), 'utf8').trim().split('\n');
      assert.equal(lines.length, DEMO_EXPECTED_URLS, 'every demo URL finished, once');
    }
    assert.notEqual(arenas[0], arenas[1], 'the second demo crawls again in a fresh arena');
  });
});
