import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  ConfigError,
  parseSandboxConfig,
  pathMapping,
  runTool,
  createToolContext,
} from '@sbx/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalSandbox } from './local-sandbox.js';
import { LocalSandboxProvider } from './local-sandbox-provider.js';

let base: string;
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'sbx-hostile-config-'));
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

function configIssues(sandbox: Record<string, unknown>): string[] {
  try {
    parseSandboxConfig({ sandbox });
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.issues.map((i) => `${i.path}: ${i.message}`);
  }
}

describe('configuration that would expose the host is refused', () => {
  it('skills.container_path /etc is refused by validation, with its key path', () => {
    expect(configIssues({ skills: { container_path: '/etc' } })).toEqual([
      expect.stringMatching(
        /^sandbox\.skills\.container_path: must not overlap the host system directory \/etc/,
      ),
    ]);
  });

  it('the local provider refuses a skills root over any host system tree (/usr/share/skills)', () => {
    expect(
      () => new LocalSandboxProvider({ baseDir: base, skillsContainerPath: '/usr/share/skills' }),
    ).toThrow(/sandbox\.skills\.container_path: must not overlap the host system directory \/usr/);
  });

  it.each([
    [{ base_dir: '/' }, 'sandbox.base_dir: must not be the host root "/"'],
    [{ base_dir: '/etc' }, 'sandbox.base_dir: must not be the host system directory /etc'],
    [
      { base_dir: '/proc/self' },
      'sandbox.base_dir: must not be inside the host system directory /proc',
    ],
    [
      { mounts: [{ host_path: '/', container_path: '/mnt/host' }] },
      'sandbox.mounts[0].host_path: must not be the host root "/"',
    ],
    [
      { bash_command_timeout: 2_147_484 },
      'sandbox.bash_command_timeout: must be <= 2147483, got number 2147484',
    ],
    [
      { search_timeout_seconds: 3_000_000 },
      'sandbox.search_timeout_seconds: must be <= 2147483, got number 3000000',
    ],
  ])('%j is refused: %s', (section, message) => {
    expect(configIssues(section)).toContain(message);
  });

  it('the local provider refuses base_dir "/" given directly', () => {
    expect(() => new LocalSandboxProvider({ baseDir: '/' })).toThrow(ConfigError);
  });

  it.each([0, -1, 1.5, Number.NaN])(
    'a cache of %s thread sandboxes is refused: it is also the bound on live namespaces',
    (max) => {
      expect(() => new LocalSandboxProvider({ baseDir: base, maxCachedThreads: max })).toThrow(
        /maxCachedThreads: must be a positive integer/,
      );
    },
  );
});

describe('a confined local sandbox reaches only what its mounts map', () => {
  it('a path below a virtual root that no mount covers is refused, not read from the host', async () => {
    const sandbox = new LocalSandbox('t', {
      mappings: [pathMapping('/etc/public', base, true)],
    });
    await expect(sandbox.readFile('/etc/passwd')).rejects.toThrow(/outside the sandbox mounts/);
    await expect(sandbox.grep('/etc', 'root')).rejects.toThrow(/outside the sandbox mounts/);
    await expect(sandbox.glob('/etc', '*')).rejects.toThrow(/outside the sandbox mounts/);
    // The parent of mounts lists the mounts, nothing of the host directory behind the name.
    expect(await sandbox.listDir('/etc')).toEqual(['/etc/public/']);
  });

  it('through the agent tools with host bash off: /mnt/skills/../ style reads outside categories fail', async () => {
    const provider = new LocalSandboxProvider({ baseDir: base });
    const context = createToolContext({ provider, userId: 'u', threadId: 't' });
    const out = await runTool('read_file', { path: '/mnt/skills/not-a-category/x' }, context);
    expect(out).toMatch(/^Error: /);
    expect(out).not.toMatch(/root:/);
    await provider.shutdown();
  });
});
