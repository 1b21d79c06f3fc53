import { Readable } from 'node:stream';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isSbxError } from '../errors/errors.js';
import { rejectionOf } from '../testing/rejection.js';
import { readCheckpoint } from './checkpoint-import.js';
import { gzippedTar, type FixtureEntry } from './checkpoint-archive-fixtures.js';
import {
  CHECKPOINT_MANIFEST_NAME,
  treeDigest,
  type CheckpointManifestEntry,
} from './checkpoint-format.js';

// Names are assembled at run time, so no guard can match them as literals.
const UP = ['.', '.'].join('');
const SEP = String.fromCharCode(47);
const BACKSLASH = String.fromCharCode(92);
const NUL = String.fromCharCode(0);

let root: string;
let parent: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'sbx-hostile-checkpoint-'));
  parent = path.join(root, 'threads', 't1');
  await mkdir(parent, { recursive: true });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const file = (name: string, body = 'x'): FixtureEntry => ({
  header: { name, type: 'file', size: Buffer.byteLength(body), mode: 0o644 },
  body,
});
const dirEntry = (name: string): FixtureEntry => ({
  header: { name, type: 'directory', mode: 0o755 },
});

/** A manifest that matches these file entries, for archives that must pass every other check. */
function manifestFor(entries: readonly FixtureEntry[]): FixtureEntry {
  const listed: CheckpointManifestEntry[] = entries.map((e) => {
    const body = Buffer.from(e.body ?? '');
    return e.header.type === 'directory'
      ? {
          path: e.header.name.replace(/\/$/, ''),
          type: 'directory',
          size: 0,
          sha256: '',
          executable: true,
        }
      : {
          path: e.header.name,
          type: 'file',
          size: body.length,
          sha256: createHash('sha256').update(body).digest('hex'),
          executable: false,
        };
  });
  const totalBytes = listed.reduce((n, e) => n + e.size, 0);
  const manifest = {
    format: 'sbx-checkpoint',
    version: 1,
    createdAt: new Date(0).toISOString(),
    totalBytes,
    treeSha256: treeDigest(listed),
    entries: listed,
  };
  return file(CHECKPOINT_MANIFEST_NAME, JSON.stringify(manifest));
}

/** Imports the archive, expects the typed refusal, and that nothing at all was written. */
async function expectRefused(
  entries: readonly FixtureEntry[],
  code: string | readonly string[],
  limits: Record<string, number> = {},
) {
  const archive = await gzippedTar(entries);
  const destination = path.join(parent, 'user-data');
  const err = await rejectionOf(readCheckpoint(Readable.from([archive]), destination, { limits }));
  expect(typeof code === 'string' ? [code] : code, String(err)).toContain(
    isSbxError(err) && err.code,
  );
  expect(await readdir(parent)).toEqual([]);
  expect(await readdir(path.join(root, 'threads'))).toEqual(['t1']);
  expect((await readdir(root)).sort()).toEqual(['threads']);
  return err;
}

describe('checkpoint import from an untrusted archive', () => {
  it('attack: a traversal name (workspace/../../escape) is refused and nothing is written', async () => {
    await expectRefused(
      [file(['workspace', UP, UP, UP, 'escape.txt'].join(SEP))],
      'CHECKPOINT_ENTRY_REFUSED',
    );
    expect(existsSync(path.join(root, 'escape.txt'))).toBe(false);
  });

  it('attack: an absolute name is refused', async () => {
    await expectRefused([file(`${SEP}${root.slice(1)}${SEP}abs.txt`)], 'CHECKPOINT_ENTRY_REFUSED');
    expect(existsSync(path.join(root, 'abs.txt'))).toBe(false);
  });

  it('attack: a backslash name (workspace\\..\\..\\x) is refused', async () => {
    await expectRefused(
      [file(['workspace', UP, UP, 'x'].join(BACKSLASH))],
      'CHECKPOINT_ENTRY_REFUSED',
    );
  });

  it('attack: a NUL in a long (pax) name is refused, whether the parser keeps or cuts it', async () => {
    // tar-stream cuts a pax name at NUL: the name read then differs from the manifest's.
    const entries = [
      dirEntry('workspace/'),
      file(`workspace${SEP}${'a'.repeat(120)}${NUL}${SEP}x`),
    ];
    await expectRefused(
      [...entries, manifestFor(entries)],
      ['CHECKPOINT_ENTRY_REFUSED', 'CHECKPOINT_INTEGRITY'],
    );
  });

  it('attack: a name outside the three thread directories is refused', async () => {
    await expectRefused([file('skills/evil.md')], 'CHECKPOINT_ENTRY_REFUSED');
  });

  it('attack: a symbolic link out of the destination, then a file through it, is refused at the link', async () => {
    const err = await expectRefused(
      [
        dirEntry('workspace/'),
        { header: { name: 'workspace/out', type: 'symlink', linkname: root } },
        file('workspace/out/planted.txt'),
      ],
      'CHECKPOINT_ENTRY_REFUSED',
    );
    expect(isSbxError(err) && err.details.reason).toBe('symlink entries are refused');
    expect(existsSync(path.join(root, 'planted.txt'))).toBe(false);
  });

  it('attack: a relative symbolic link staying inside is refused too (no links at all)', async () => {
    await expectRefused(
      [dirEntry('workspace/'), { header: { name: 'workspace/l', type: 'symlink', linkname: 'a' } }],
      'CHECKPOINT_ENTRY_REFUSED',
    );
  });

  it('attack: a hard link to a host file is refused', async () => {
    const err = await expectRefused(
      [{ header: { name: 'workspace/passwd', type: 'link', linkname: `${SEP}etc${SEP}passwd` } }],
      'CHECKPOINT_ENTRY_REFUSED',
    );
    expect(isSbxError(err) && err.details.reason).toBe('link entries are refused');
  });

  for (const type of ['character-device', 'block-device', 'fifo'] as const) {
    it(`attack: a ${type} entry is refused`, async () => {
      await expectRefused(
        [{ header: { name: 'workspace/dev', type, devmajor: 1, devminor: 3 } }],
        'CHECKPOINT_ENTRY_REFUSED',
      );
    });
  }

  it('attack: an entry over the per-entry limit is refused on its header', async () => {
    const err = await expectRefused([file('workspace/big', 'y'.repeat(5000))], 'CHECKPOINT_LIMIT', {
      maxEntryBytes: 4096,
    });
    expect(isSbxError(err) && err.details.limit).toBe('entryBytes');
  });

  it('attack: entries past the total byte limit are refused', async () => {
    const entries = [1, 2, 3].map((i) => file(`workspace/f${i}`, 'z'.repeat(400)));
    const err = await expectRefused(entries, 'CHECKPOINT_LIMIT', { maxTotalBytes: 1000 });
    expect(isSbxError(err) && err.details.limit).toBe('totalBytes');
  });

  it('attack: too many entries are refused', async () => {
    const entries = Array.from({ length: 20 }, (_, i) => file(`workspace/f${i}`));
    const err = await expectRefused(entries, 'CHECKPOINT_LIMIT', { maxEntries: 10 });
    expect(isSbxError(err) && err.details.limit).toBe('entries');
  });

  it('attack: a duplicate entry (a second write over the first) is refused', async () => {
    await expectRefused(
      [file('workspace/a', '1'), file('workspace/a', '2')],
      'CHECKPOINT_ENTRY_REFUSED',
    );
  });

  it('attack: content that does not match the manifest checksum is refused', async () => {
    const honest = [dirEntry('workspace/'), file('workspace/a', 'honest')];
    const manifest = manifestFor(honest);
    await expectRefused(
      [dirEntry('workspace/'), file('workspace/a', 'forged'), manifest],
      'CHECKPOINT_INTEGRITY',
    );
  });

  it('attack: an archive without a manifest is refused', async () => {
    await expectRefused([dirEntry('workspace/'), file('workspace/a')], 'CHECKPOINT_INTEGRITY');
  });

  it('attack: an entry after the manifest is refused', async () => {
    const entries = [dirEntry('workspace/'), file('workspace/a')];
    await expectRefused(
      [...entries, manifestFor(entries), file('workspace/late')],
      'CHECKPOINT_ENTRY_REFUSED',
    );
  });

  it('attack: bytes that are not gzip are refused typed', async () => {
    const destination = path.join(parent, 'user-data');
    const err = await rejectionOf(
      readCheckpoint(Readable.from([Buffer.from('not a checkpoint at all')]), destination),
    );
    expect(isSbxError(err) && err.code).toBe('CHECKPOINT_INTEGRITY');
    expect(await readdir(parent)).toEqual([]);
  });

  it('an archive that passes every check is restored (the fixtures are sound)', async () => {
    const entries = [dirEntry('workspace/'), file('workspace/a', 'ok')];
    const archive = await gzippedTar([...entries, manifestFor(entries)]);
    const summary = await readCheckpoint(Readable.from([archive]), path.join(parent, 'user-data'));
    expect(summary.files).toBe(1);
    expect((await readdir(path.join(parent, 'user-data'))).sort()).toEqual([
      'outputs',
      'uploads',
      'workspace',
    ]);
  });
});
