import type { SandboxLifecycleSupport, SandboxProviderInit } from '@sbx/core';
import { MemorySandboxProvider } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { importerWith, sbx, tempDir } from './test-support.js';

/** A provider with pause, recording what the command asked of it (in-memory sandboxes). */
function pausingProvider() {
  const calls: string[] = [];
  class Provider extends MemorySandboxProvider {
    constructor(_init: SandboxProviderInit) {
      super();
    }
    override get lifecycleSupport(): SandboxLifecycleSupport {
      return { pause: true, snapshot: false };
    }
    override async acquire(options: Parameters<MemorySandboxProvider['acquire']>[0] = {}) {
      calls.push(`acquire:${options.threadId}`);
      return super.acquire(options);
    }
    override async pause(id: string): Promise<void> {
      calls.push(`pause:${id}`);
    }
    override async resume(id: string): Promise<void> {
      calls.push(`resume:${id}`);
    }
    override async reset(): Promise<void> {
      calls.push('reset');
    }
    override async shutdown(): Promise<void> {
      calls.push('shutdown');
    }
  }
  return { Provider, calls };
}

describe('sbx pause / sbx resume', () => {
  it('pause acquires the thread, pauses its sandbox and hands the provider over without stopping it', async () => {
    const fake = pausingProvider();
    const importer = importerWith({ '@fake/pausing': { default: fake.Provider } });
    const run = await sbx(['pause', 't1', '-p', '@fake/pausing', '--json'], { importer });
    expect(run.code, run.stderr).toBe(0);
    const printed = JSON.parse(run.stdout) as { sandboxId: string; state: string };
    expect(printed).toMatchObject({ ok: true, threadId: 't1', state: 'paused' });
    expect(fake.calls).toEqual(['acquire:t1', `pause:${printed.sandboxId}`, 'reset']);
  });

  it('resume is the acquire (which resumes a paused sandbox), then the hand-over', async () => {
    const fake = pausingProvider();
    const importer = importerWith({ '@fake/pausing': { default: fake.Provider } });
    const run = await sbx(['resume', '-t', 't2', '-p', '@fake/pausing'], { importer });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/: running\n$/);
    expect(fake.calls).toEqual(['acquire:t2', 'reset']);
  });

  it('a provider without pause (the local one) refuses cleanly: the typed error, no stack, nothing acquired', async () => {
    const home = await tempDir('pause-local');
    try {
      const env = { SBX_HOME: home.dir };
      const json = await sbx(['pause', 't1', '--json'], { env });
      expect(json.code).not.toBe(0);
      expect(JSON.parse(json.stdout).error.code).toBe('CAPABILITY_NOT_SUPPORTED');
      const text = await sbx(['resume', 't1'], { env });
      expect(text.code).toBe(json.code);
      expect(text.stderr).toContain('does not support resume');
      expect(text.stderr).not.toMatch(/\n\s+at /);
      const { readdir } = await import('node:fs/promises');
      expect(await readdir(home.dir).catch(() => [])).not.toContain('users');
    } finally {
      await home.remove();
    }
  });
});
