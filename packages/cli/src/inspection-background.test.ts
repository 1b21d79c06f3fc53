import { describe, expect, it } from 'vitest';
import type { SandboxProviderInit } from '@sbx/core';
import { importerWith, memoryProviderClass, sbx } from './test-support.js';

/**
 * `ls` and `gc` only inspect. A provider built for them must not start its background work: a
 * start-up reconciliation would adopt untracked containers, and this process's shutdown would then
 * stop them.
 */
describe('inspection commands build the provider without background work', () => {
  function recordingProvider() {
    const inits: SandboxProviderInit[] = [];
    const fake = memoryProviderClass();
    class Recording extends fake.Provider {
      constructor(init: SandboxProviderInit) {
        super(init);
        inits.push(init);
      }
    }
    return { inits, importer: importerWith({ '@fake/recording': { default: Recording } }) };
  }

  for (const command of ['ls', 'gc']) {
    it(`sbx ${command} passes background: false`, async () => {
      const { inits, importer } = recordingProvider();
      await sbx([command, '--json', '--provider', '@fake/recording'], { importer });
      expect(inits).toHaveLength(1);
      expect(inits[0]?.background).toBe(false);
    });
  }

  it('sbx exec leaves the provider default (background on)', async () => {
    const { inits, importer } = recordingProvider();
    await sbx(['exec', '--provider', '@fake/recording', '--', 'true'], { importer });
    expect(inits).toHaveLength(1);
    expect(inits[0]?.background).toBeUndefined();
  });
});
