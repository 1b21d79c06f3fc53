import { readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { sbx, tempDir } from './test-support.js';

describe('sbx demo', () => {
  it("runs @sbx/local's scripted session in SBX_HOME", async () => {
    const home = await tempDir('demo');
    try {
      const run = await sbx(['demo'], { env: { SBX_HOME: home.dir } });
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^sbx local demo: user 'demo-user', thread 'demo-thread'\n/);
      expect(run.stdout).toContain(`data directory: ${home.dir}\n`);
      expect(run.stdout).toContain('Hello, sandbox!');
      expect(await readdir(home.dir)).toContain('users');
    } finally {
      await home.remove();
    }
  });

  it('collects the lines into one JSON document with --json', async () => {
    const home = await tempDir('demo-json');
    try {
      const run = await sbx(['demo', '--json'], { env: { SBX_HOME: home.dir } });
      const doc = JSON.parse(run.stdout) as { ok: boolean; lines: string[] };
      expect(doc.ok).toBe(true);
      expect(doc.lines.at(-1)).toBe('sandbox: local:demo-user:demo-thread');
    } finally {
      await home.remove();
    }
  });
});
