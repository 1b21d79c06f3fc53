import { describe, expect, it } from 'vitest';
import type { OrphanReapReport, ReapOrphansOptions } from '@sbx/core';
import { importerWith, memoryProviderClass, sbx, tempDir } from './test-support.js';

describe('sbx gc', () => {
  it('has nothing to collect on the local provider', async () => {
    const home = await tempDir('gc');
    try {
      const run = await sbx(['gc'], { env: { SBX_HOME: home.dir } });
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/exposes no orphan collection.*nothing to collect/);
      const json = await sbx(['gc', '--json'], { env: { SBX_HOME: home.dir } });
      expect(JSON.parse(json.stdout)).toEqual({
        ok: true,
        provider: '@sbx/local',
        supported: false,
        reaped: [],
        kept: [],
      });
    } finally {
      await home.remove();
    }
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
