import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemorySandbox } from '../testing/memory-sandbox.js';
import { MemorySandboxProvider } from '../testing/memory-sandbox-provider.js';
import { createToolContext } from './create-tool-context.js';
import { lsTool } from './ls-tool.js';
import { isLocalSandboxId, localToolEnvironment } from './local-sandbox-guard.js';
import { readFileTool } from './read-file-tool.js';
import type { LocalToolEnvironment, ToolContext } from './tool-context.js';
import { writeFileTool } from './write-file-tool.js';

const ONLY =
  'Error: Only paths under /mnt/user-data/, /mnt/skills/, /mnt/acp-workspace/, or configured mount paths are allowed';

describe('§10.5 file-tool path validation on a local sandbox', () => {
  let base: string;
  let local: LocalToolEnvironment;

  beforeAll(async () => {
    base = await mkdtemp(path.join(tmpdir(), 'sbx-guard-'));
    const ud = path.join(base, 'user-data');
    for (const dir of ['workspace', 'uploads', 'outputs'])
      await mkdir(path.join(ud, dir), { recursive: true });
    await mkdir(path.join(base, 'outside'));
    await writeFile(path.join(base, 'outside', 'secret.txt'), 'secret');
    await symlink(path.join(base, 'outside'), path.join(ud, 'workspace', 'escape'));
    local = {
      threadData: {
        workspacePath: path.join(ud, 'workspace'),
        uploadsPath: path.join(ud, 'uploads'),
        outputsPath: path.join(ud, 'outputs'),
      },
      customMounts: [
        { containerPath: '/mnt/code-read', readOnly: true },
        { containerPath: '/mnt/code-read/scratch', readOnly: false },
      ],
    };
  });
  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
  });

  function tools(env: LocalToolEnvironment | null = local) {
    const provider = new MemorySandboxProvider({
      idPrefix: 'local',
      sandboxOptions: {
        files: {
          '/mnt/user-data/workspace/ok.txt': 'ok\n',
          '/mnt/skills/public/demo/SKILL.md': 'skill\n',
          '/mnt/acp-workspace/notes.md': 'acp\n',
          '/mnt/code-read/src.ts': 'code\n',
        },
      },
    });
    const ctx: ToolContext = createToolContext({
      provider,
      threadId: 't1',
      config: { readBeforeWrite: { enabled: false } },
      ...(env ? { local: env } : {}),
    });
    return {
      read: (p: string) => readFileTool(ctx, { path: p }),
      write: (p: string) => writeFileTool(ctx, { path: p, content: 'x' }),
      ls: (p: string) => lsTool(ctx, { path: p }),
    };
  }

  it('rejects any .. segment, either separator, as traversal (#53, #60)', async () => {
    const t = tools();
    expect(await t.read('/mnt/user-data/workspace/../../../etc/passwd')).toBe(
      'Error: Access denied: path traversal detected',
    );
    expect(await t.write('/mnt/user-data/workspace\\..\\x')).toBe(
      'Error: Access denied: path traversal detected',
    );
    expect(await t.read('/mnt/user-data/workspace/ok.txt')).toBe('ok\n');
  });

  it('rejects paths outside the virtual roots (#54)', async () => {
    expect(await tools().read('/Users/someone/config.yaml')).toBe(ONLY);
  });

  // #55 refuses the bare root for ls too; sbx lets it be listed (a changed behaviour).
  it('lists the bare /mnt/user-data root, refuses it as a write target, allows its sub-paths (#55)', async () => {
    const t = tools();
    expect(await t.ls('/mnt/user-data')).not.toMatch(/^Error:/);
    expect(await t.ls('/mnt/user-data/')).not.toMatch(/^Error:/);
    expect(await t.write('/mnt/user-data')).toBe(
      'Error: /mnt/user-data itself is not writable; write below /mnt/user-data/workspace/, uploads/ or outputs/',
    );
    expect(await t.write('/mnt/user-data/outputs/new.md')).toBe('OK');
  });

  it('skills and ACP paths are readable, writes fail with their own messages (#56)', async () => {
    const t = tools();
    expect(await t.read('/mnt/skills/public/demo/SKILL.md')).toBe('skill\n');
    expect(await t.write('/mnt/skills/public/demo/SKILL.md')).toBe(
      'Error: Write access to skills path is not allowed: /mnt/skills/public/demo/SKILL.md',
    );
    expect(await t.read('/mnt/acp-workspace/notes.md')).toBe('acp\n');
    expect(await t.write('/mnt/acp-workspace/notes.md')).toBe(
      'Error: Write access to ACP workspace is not allowed: /mnt/acp-workspace/notes.md',
    );
  });

  it('a custom skills container path replaces /mnt/skills (#56)', async () => {
    const t = tools({ ...local, skillsContainerPath: '/custom/skills' });
    expect(await t.write('/custom/skills/a.md')).toBe(
      'Error: Write access to skills path is not allowed: /custom/skills/a.md',
    );
    expect(await t.read('/mnt/skills/public/demo/SKILL.md')).toContain(
      'Only paths under /mnt/user-data/, /custom/skills/',
    );
  });

  it('custom mounts: readable, read-only writes refused, longest prefix wins, siblings are not mounts (#57)', async () => {
    const t = tools();
    expect(await t.read('/mnt/code-read/src.ts')).toBe('code\n');
    expect(await t.write('/mnt/code-read/src.ts')).toBe(
      'Error: Write access to read-only mount is not allowed: /mnt/code-read/src.ts',
    );
    expect(await t.write('/mnt/code-read/scratch/out.txt')).toBe('OK');
    expect(await t.read('/mnt/code-read-extra/x')).toBe(ONLY);
  });

  it('needs thread data (#59)', async () => {
    expect(await tools(null).read('/mnt/user-data/workspace/ok.txt')).toBe(
      'Error: Thread data not available for local sandbox',
    );
  });

  it('confines user-data paths to the thread directories, symbolic links followed (#60)', async () => {
    expect(await tools().read('/mnt/user-data/workspace/escape/secret.txt')).toBe(
      'Error: Access denied: path traversal detected',
    );
  });
});

describe('local sandbox detection', () => {
  it('is local for "local" and "local:..." ids only', () => {
    expect(isLocalSandboxId('local')).toBe(true);
    expect(isLocalSandboxId('local:alice:t1')).toBe(true);
    expect(isLocalSandboxId('localhost')).toBe(false);
    expect(isLocalSandboxId('36c73fb5b104eee4')).toBe(false);
    expect(isLocalSandboxId(undefined)).toBe(false);
  });

  it('takes the environment from the context, else from a sandbox that reports one', () => {
    const reported: LocalToolEnvironment = { skillsContainerPath: '/from/sandbox' };
    const sandbox = Object.assign(new MemorySandbox('local:a:b'), {
      localToolEnvironment: reported,
    });
    const provider = new MemorySandboxProvider();
    expect(localToolEnvironment(createToolContext({ provider }), sandbox)).toBe(reported);
    const own: LocalToolEnvironment = { skillsContainerPath: '/from/context' };
    expect(localToolEnvironment(createToolContext({ provider, local: own }), sandbox)).toBe(own);
  });
});
