import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';
import type { Header } from 'tar-stream';

/** One entry of a hand-built archive: its header as a hostile tool would write it, and bytes. */
export interface FixtureEntry {
  readonly header: Partial<Header> & { name: string };
  readonly body?: Buffer | string;
}

/** A gzip-compressed tar of exactly these entries, with no checks: the shape under test. */
export async function gzippedTar(entries: readonly FixtureEntry[]): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  const done = new Promise<void>((resolve, reject) => {
    pack.on('data', (c) => {
      chunks.push(c as Buffer);
    });
    pack.on('end', () => resolve());
    pack.on('error', reject);
  });
  for (const entry of entries) {
    const body = entry.body === undefined ? undefined : Buffer.from(entry.body);
    await new Promise<void>((resolve, reject) => {
      pack.entry(entry.header as Header, body ?? Buffer.alloc(0), (err) =>
        err ? reject(err) : resolve(),
      );
    });
  }
  pack.finalize();
  await done;
  return gzipSync(Buffer.concat(chunks));
}
