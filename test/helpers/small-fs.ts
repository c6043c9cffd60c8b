/**
 * A small filesystem of its own (tmpfs of a given size), to fill on
 * purpose: what a disk that runs out looks like to the code writing on it.
 * Mounting needs root (CAP_SYS_ADMIN): elsewhere it resolves null and the
 * caller skips, saying why.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface SmallFs {
  dir: string;
  unmount(): Promise<void>;
}

export async function mountSmallFs(bytes: number): Promise<SmallFs | null> {
  const dir = await mkdtemp(join(tmpdir(), 'weir-smallfs-'));
  try {
    await run('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0755`, 'tmpfs', dir]);
  } catch {
    await rm(dir, { recursive: true, force: true });
    return null;
  }
  return {
    dir,
    async unmount() {
      await run('umount', ['-l', dir]).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export const SMALL_FS_SKIP = 'mounting a small tmpfs needs root (CAP_SYS_ADMIN)';

/**
 * Registers a small filesystem for the calling suite: mounted before its
 * tests, unmounted after. `get()` is null where mounting is not allowed
 * (the test then skips with SMALL_FS_SKIP).
 */
export function useSmallFs(bytes: number): { get(): SmallFs | null } {
  let fs: SmallFs | null = null;
  before(async () => {
    fs = await mountSmallFs(bytes);
  });
  after(async () => fs?.unmount());
  return { get: () => fs };
}
