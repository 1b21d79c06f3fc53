import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createToolContext, runToolCall, type ToolContext } from '@sbx/core';
import { LocalSandboxProvider } from './local-sandbox-provider.js';

const WORKSPACE = '/mnt/user-data/workspace';

/**
 * Every part of a host bash command runs in the thread's workspace, whatever shell operator the
 * agent puts between its parts. A `cd '<dir>' && ` prefix is read as `(cd <dir> && a) & b` for
 * `a & b`: `b` ran in the gateway's own directory, read and wrote files there, and `pwd` printed
 * an unmasked host path. The commands name no path at all, so the bash path guard has nothing to
 * see; the file names are made at run time.
 */
describe('host bash runs every part of a command in the workspace', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;
  let thread = 0;
  /** Names a regression would create in the gateway's own directory, removed after each case. */
  const strays: string[] = [];

  beforeAll(async () => {
    baseDir = await mkdtemp(path.join(tmpdir(), 'sbx-local-bash-cwd-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true });
  });
  afterEach(async () => {
    for (const name of strays.splice(0)) await rm(path.join(process.cwd(), name), { force: true });
  });
  afterAll(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  const probe = (): string => {
    const name = `sbx-cwd-probe-${randomUUID()}`;
    strays.push(name);
    return name;
  };

  /** A thread of its own for each case: its tool context and its sandbox. */
  async function freshThread() {
    const threadId = `t${++thread}`;
    const context = createToolContext({
      provider,
      userId: 'u1',
      threadId,
      config: { allowHostBash: true, processTools: true },
    });
    const sandbox = provider.get(await provider.acquire({ userId: 'u1', threadId }))!;
    return { context, sandbox };
  }

  /** Runs `command` through the bash tool, one-shot or in yield mode. */
  function bash(context: ToolContext, command: string, mode: 'one-shot' | 'yield') {
    return runToolCall(
      'bash',
      mode === 'yield' ? { command, yield_time_ms: 60_000 } : { command },
      context,
    );
  }

  async function existsInGatewayCwd(name: string): Promise<boolean> {
    return stat(path.join(process.cwd(), name)).then(
      () => true,
      () => false,
    );
  }

  /** The lines `pwd` printed: each is the workspace, never a host path. */
  function expectOnlyWorkspace(text: string, pwdLines: number): void {
    const lines = text.split('\n').filter((l) => l.startsWith('/'));
    expect(lines).toEqual(Array.from({ length: pwdLines }, () => WORKSPACE));
    expect(text).not.toContain(process.cwd());
  }

  for (const mode of ['one-shot', 'yield'] as const) {
    it(`\`true & pwd; cat f; echo x > g; rm -f f\` reads, writes and deletes in the workspace (${mode})`, async () => {
      const f = probe();
      const g = probe();
      const { context, sandbox } = await freshThread();
      await sandbox.writeFile(`${WORKSPACE}/${f}`, 'inside\n');
      const result = await bash(context, `true & pwd; cat ${f}; echo x > ${g}; rm -f ${f}`, mode);
      expect(result.isError).toBe(false);
      expect(result.text).toContain('inside');
      expectOnlyWorkspace(result.text, 1);
      expect(await sandbox.readFile(`${WORKSPACE}/${g}`)).toBe('x\n');
      await expect(sandbox.readFile(`${WORKSPACE}/${f}`)).rejects.toMatchObject({
        kind: 'ENOENT',
      });
      expect(await existsInGatewayCwd(g)).toBe(false);
    });

    const shapes: readonly { name: string; make: (file: string) => string; pwds: number }[] = [
      { name: 'a & b; c', make: (file) => `true & echo x > ${file}; pwd`, pwds: 1 },
      { name: 'a & b & wait', make: (file) => `echo x > ${file} & pwd & wait`, pwds: 1 },
      { name: 'x || y', make: (file) => `false || { pwd; echo x > ${file}; }`, pwds: 1 },
      { name: 'x && y', make: (file) => `true && pwd && echo x > ${file}`, pwds: 1 },
      { name: 'a; b', make: (file) => `true; pwd; echo x > ${file}`, pwds: 1 },
      { name: 'a newline b', make: (file) => `true &\npwd\necho x > ${file}`, pwds: 1 },
      { name: 'a | b', make: (file) => `true | pwd; echo x | cat > ${file}`, pwds: 1 },
      { name: 'a comment, then b', make: (file) => `# nothing\npwd; echo x > ${file}`, pwds: 1 },
      {
        name: 'a subshell that leaves, then b',
        make: (file) => `(cd -P . && true) & pwd; echo x > ${file}; wait`,
        pwds: 1,
      },
    ];
    for (const shape of shapes) {
      it(`\`${shape.name}\` runs in the workspace (${mode})`, async () => {
        const file = probe();
        const { context, sandbox } = await freshThread();
        const result = await bash(context, shape.make(file), mode);
        expect(result.isError).toBe(false);
        expectOnlyWorkspace(result.text, shape.pwds);
        expect(await sandbox.readFile(`${WORKSPACE}/${file}`)).toBe('x\n');
        expect(await existsInGatewayCwd(file)).toBe(false);
      });
    }
  }
});
