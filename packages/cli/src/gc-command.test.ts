import { lutimes, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { OrphanReapReport, ReapOrphansOptions } from '@sbx/core';
import { importerWith, memoryProviderClass, sbx, tempDir } from './test-support.js';

describe('sbx gc', () => {
  it('on the local provider, removes thread directories idle past the max age', async () => {
    const home = await tempDir('gc');
    try {
      const env = { SBX_HOME: home.dir };
      const write = [
        'tool',
        'write_file',
        '{"path":"/mnt/user-data/workspace/a.md","content":"x"}',
      ];
      expect((await sbx(write, { env })).code).toBe(0);
      const fresh = await sbx(['gc', '--dry-run'], { env });
      expect(fresh.stdout).toContain('kept local:default:cli: changed within the last 30 days');
      const thread = path.join(home.dir, 'users', 'default', 'threads', 'cli');
      const old = new Date(Date.now() - 31 * 86_400_000);
      for (const entry of await readdir(thread, { withFileTypes: true, recursive: true })) {
        await lutimes(path.join(entry.parentPath, entry.name), old, old);
      }
      await lutimes(thread, old, old);
      const json = await sbx(['gc', '--json'], { env });
      expect(JSON.parse(json.stdout)).toEqual({
        ok: true,
        provider: '@sbx/local',
        supported: true,
        dryRun: false,
        reaped: ['local:default:cli'],
        kept: [],
      });
      await expect(stat(thread)).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      await home.remove();
    }
  });

  it('reports a provider without reapOrphans() as having nothing to collect', async () => {
    const fake = memoryProviderClass();
    const importer = importerWith({ '@fake/plain': { default: fake.Provider } });
    const run = await sbx(['gc', '--provider', '@fake/plain'], { importer });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/exposes no orphan collection.*nothing to collect/);
  });

  it("delegates to the provider's reapOrphans() and prints its decisions", async () => {
    const calls: ReapOrphansOptions[] = [];
    const fake = memoryProviderClass();
    class Reaping extends fake.Provider {
      async reapOrphans(options: ReapOrphansOptions = {}): Promise<OrphanReapReport> {
        calls.push(options);
        return {
          reaped: ['box-old'],
          kept: [{ id: 'box-peer', reason: 'leased by a live peer' }],
        };
      }
    }
    const importer = importerWith({ '@fake/reaping': { default: Reaping } });
    const run = await sbx(['gc', '--dry-run', '--provider', '@fake/reaping'], { importer });
    expect(run.code).toBe(0);
    expect(run.stdout.split('\n')).toEqual([
      'would reap box-old',
      'kept box-peer: leased by a live peer',
      '1 would reap, 1 kept',
      '',
    ]);
    expect(calls).toEqual([{ dryRun: true }]);
    expect(fake.instances[0]?.releaseCalls).toEqual([]);
  });
});
