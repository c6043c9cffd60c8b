import { createReadStream, createWriteStream, openSync, type WriteStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { BaseSerializerBuffer } from 'warcio';

/**
 * A private directory for the bodies being archived: created 0700 (mkdtemp)
 * inside the WARC directory on first use, so a body never lands in the
 * shared OS temp dir where anyone could read it, and removed whole when the
 * writer closes. Its name says whose it is (`.spool-<host>-<pid>-XXXXXX`):
 * one left by a killed worker of this host (its pid gone) is removed when
 * the next one starts spooling there.
 */
export class SpoolDir {
  private made: Promise<string> | null = null;
  private seq = 0;

  constructor(private readonly parent: string) {}

  /** A new file path inside the directory (the directory made first). */
  async nextPath(): Promise<string> {
    this.made ??= mkdir(this.parent, { recursive: true, mode: 0o750 }).then(async () => {
      await removeStaleSpools(this.parent);
      return mkdtemp(join(this.parent, `.spool-${SPOOL_HOST}-${process.pid}-`));
    });
    const dir = await this.made.catch((err: unknown) => {
      this.made = null;
      throw err;
    });
    return join(dir, `${process.pid}-${this.seq++}.body`);
  }

  async remove(): Promise<void> {
    const made = this.made;
    this.made = null;
    const dir = await made?.catch(() => null);
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}

/** This host's name as it goes into a spool directory's name (anything but [A-Za-z0-9.] made "_"). */
const SPOOL_HOST = hostname().replace(/[^A-Za-z0-9.]/g, '_').slice(0, 64) || 'host';
const SPOOL_NAME = /^\.spool-([A-Za-z0-9._]+)-(\d+)-[A-Za-z0-9]{6}$/;

/** Is a process of this host alive (signal 0: EPERM means it is, someone else's)? */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes spool directories in `dir` left by processes of this host that are gone (best effort). */
export async function removeStaleSpools(dir: string): Promise<void> {
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const m = SPOOL_NAME.exec(name);
    if (!m || m[1] !== SPOOL_HOST || Number(m[2]) === process.pid || alive(Number(m[2]))) continue;
    await rm(join(dir, name), { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * The serializer's copy of one record's body (warcio reads the body once to
 * learn its length and digests, then writes it out after the header): in
 * memory up to `memBytes`, the rest in a 0600 file at `path`. A write error
 * (a full disk) is kept and thrown when the body is read back, never left as
 * an unhandled 'error'. `dispose` removes the file, whatever happened.
 */
export class SpoolBuffer implements BaseSerializerBuffer {
  private readonly buffers: Uint8Array[] = [];
  private size = 0;
  private file: WriteStream | null = null;
  private failure: Error | null = null;
  private created = false;

  constructor(
    private readonly memBytes: number,
    private readonly path: string,
  ) {}

  /** Whether part of the body went to the file. */
  get spooled(): boolean {
    return this.file !== null || this.failure !== null;
  }

  write(chunk: Uint8Array): void {
    if (this.size + chunk.length <= this.memBytes) this.buffers.push(chunk);
    else this.toFile(chunk);
    this.size += chunk.length;
  }

  private toFile(chunk: Uint8Array): void {
    if (this.failure) return;
    if (!this.file) {
      try {
        // Created here or not at all ('wx': never through a planted link), readable by this user only.
        const fd = openSync(this.path, 'wx', 0o600);
        this.created = true;
        this.file = createWriteStream('', { fd });
      } catch (err) {
        this.failure = err as Error;
        return;
      }
      this.file.on('error', (err) => (this.failure ??= err));
    }
    this.file.write(chunk);
  }

  async *readAll(): AsyncGenerator<Uint8Array> {
    for (const b of this.buffers) yield b;
    const file = this.file;
    if (!file && !this.failure) return;
    if (file && !file.closed) {
      await new Promise<void>((resolve) => {
        file.once('close', resolve);
        file.end();
      });
    }
    if (this.failure) throw this.failure;
    yield* createReadStream(this.path) as AsyncIterable<Buffer>;
  }

  purge(): void {
    // dispose() does it, once the record is written or has failed.
  }

  /** Closes and removes the spool file, if one was made. */
  async dispose(): Promise<void> {
    this.file?.destroy();
    this.file = null;
    if (this.created) await unlink(this.path).catch(() => undefined);
  }
}
