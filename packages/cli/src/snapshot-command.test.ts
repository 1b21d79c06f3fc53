import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { importerWith, memoryProviderClass, sbx, tempDir } from './test-support.js';

const write = (file: string, content: string) => [
  'tool',
  'write_file',
  JSON.stringify({ path: `/mnt/user-data/workspace/${file}`, content }),
];

describe('sbx snapshot and fork', () => {
  it('export writes a thread as an archive; import restores it as another thread', async () => {
    const home = await tempDir('snapshot');
    try {
      const env = { SBX_HOME: home.dir };
      expect((await sbx([...write('a.md', 'kept'), '--thread', 'src'], { env })).code).toBe(0);
      const archive = path.join(home.dir, 'out.tar.gz');
      const exported = await sbx(['snapshot', 'export', '-t', 'src', '-o', archive, '--json'], {
        env,
      });
      expect(exported.code, exported.stderr).toBe(0);
      expect(JSON.parse(exported.stdout)).toMatchObject({ ok: true, files: 1 });
      const imported = await sbx(['snapshot', 'import', '-t', 'dst', '-i', archive], { env });
      expect(imported.code, imported.stderr).toBe(0);
      const restored = path.join(home.dir, 'users', 'default', 'threads', 'dst', 'user-data');
      expect(await readFile(path.join(restored, 'workspace', 'a.md'), 'utf8')).toBe('kept');
      // Into a thread that has data: refused as a usage error, nothing overwritten.
      const again = await sbx(['snapshot', 'import', '-t', 'dst', '-i', archive], { env });
      expect(again.code).toBe(2);
    } finally {
      await home.remove();
    }
  });

  it('export is bounded by sandbox.checkpoint: over max_entries it fails with CHECKPOINT_LIMIT, no archive', async () => {
    const home = await tempDir('snapshot-limit');
    try {
      const env = { SBX_HOME: home.dir };
      const config = path.join(home.dir, 'sbx.yaml');
      await writeFile(
        config,
        [
          'sandbox:',
          '  use: "@sbx/local"',
          `  base_dir: ${JSON.stringify(home.dir)}`,
          '  checkpoint:',
          '    max_entries: 3',
          '',
        ].join('\n'),
      );
      for (const name of ['a.md', 'b.md', 'c.md', 'd.md']) {
        const run = await sbx([...write(name, name), '--thread', 'big', '--config', config], {
          env,
        });
        expect(run.code, run.stderr).toBe(0);
      }
      const archive = path.join(home.dir, 'big.tar.gz');
      const run = await sbx(
        ['snapshot', 'export', '-t', 'big', '-o', archive, '--json', '--config', config],
        { env },
      );
      expect(JSON.parse(run.stdout).error.code).toBe('CHECKPOINT_LIMIT');
      expect(await readdir(home.dir)).not.toContain('big.tar.gz');
      expect(await readdir(home.dir)).not.toContain('big.tar.gz.partial');
    } finally {
      await home.remove();
    }
  });

  it('attack: importing an archive that is not a checkpoint fails typed and writes no thread', async () => {
    const home = await tempDir('snapshot-bad');
    try {
      const env = { SBX_HOME: home.dir };
      const archive = path.join(home.dir, 'bad.tar.gz');
      await writeFile(archive, gzipSync(Buffer.alloc(4096, 1)));
      const run = await sbx(['snapshot', 'import', '-t', 'x', '-i', archive, '--json'], { env });
      expect(run.code).toBe(3);
      expect(JSON.parse(run.stdout).error.code).toBe('CHECKPOINT_INTEGRITY');
      const threads = path.join(home.dir, 'users', 'default', 'threads');
      expect(await readdir(threads).catch(() => [])).toEqual([]);
    } finally {
      await home.remove();
    }
  });

  it('fork starts a thread from a snapshot of another on the local provider', async () => {
    const home = await tempDir('fork');
    try {
      const env = { SBX_HOME: home.dir };
      expect((await sbx([...write('b.md', 'base'), '--thread', 'one'], { env })).code).toBe(0);
      const forked = await sbx(['fork', '--from', 'one', '--thread', 'two', '--json'], { env });
      expect(forked.code, forked.stderr).toBe(0);
      expect(JSON.parse(forked.stdout)).toMatchObject({ ok: true, source: 'local:default:one' });
      const read = await sbx(
        ['tool', 'read_file', '{"path":"/mnt/user-data/workspace/b.md"}', '--thread', 'two'],
        { env },
      );
      expect(read.stdout).toContain('base');
      const created = await sbx(['snapshot', 'create', '-t', 'one', '--json'], { env });
      expect(JSON.parse(JSON.parse(created.stdout).snapshot)).toMatchObject({ provider: 'local' });
    } finally {
      await home.remove();
    }
  });

  it('a provider without snapshots refuses snapshot create and export, typed', async () => {
    const fake = memoryProviderClass();
    const importer = importerWith({ '@fake/plain': { default: fake.Provider } });
    const created = await sbx(['snapshot', 'create', '-p', '@fake/plain', '--json'], { importer });
    expect(JSON.parse(created.stdout).error.code).toBe('CAPABILITY_NOT_SUPPORTED');
    const exported = await sbx(
      ['snapshot', 'export', '-p', '@fake/plain', '-o', '/nonexistent/x.tar.gz', '--json'],
      { importer },
    );
    expect(JSON.parse(exported.stdout).error.code).toBe('CAPABILITY_NOT_SUPPORTED');
  });
});
