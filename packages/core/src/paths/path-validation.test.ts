import { mkdir, mkdtemp, realpath, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxPermissionError, SandboxRuntimeError } from '../errors/errors.js';
import {
  existingMounts,
  resolveAndValidateUserDataPath,
  validateLocalToolPath,
} from './path-validation.js';
import type { ThreadDataPaths } from './virtual-paths.js';

const TD: ThreadDataPaths = {
  workspacePath: '/data/t/user-data/workspace',
  uploadsPath: '/data/t/user-data/uploads',
  outputsPath: '/data/t/user-data/outputs',
};
const MOUNTS = [
  { containerPath: '/mnt/code-read', readOnly: true },
  { containerPath: '/mnt/code-read/writable', readOnly: false },
  { containerPath: '/mnt/scratch', readOnly: false },
];

function message(fn: () => void): string {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  return 'no error';
}

describe('validateLocalToolPath', () => {
  it('§10.5.53 rejects `..` anywhere (forward or backslash); normal virtual paths pass', () => {
    for (const p of [
      '/mnt/user-data/workspace/../../etc/passwd',
      '/mnt/user-data\\workspace\\..\\x',
      '/mnt/skills/../user-data/x',
    ]) {
      expect(message(() => validateLocalToolPath(p, TD, { readOnly: true }))).toContain(
        'Access denied: path traversal detected',
      );
    }
    expect(() => validateLocalToolPath('/mnt/user-data/workspace/a.txt', TD)).not.toThrow();
  });

  it('§10.5.54 non-virtual paths get the "Only paths under" message', () => {
    expect(message(() => validateLocalToolPath('/Users/someone/config.yaml', TD))).toContain(
      'Only paths under /mnt/user-data/, /mnt/skills/, /mnt/acp-workspace/, or configured mount paths are allowed',
    );
  });

  // §10.5.55 rejects the bare root for reading too; sbx lets ls/glob/grep read it (it lists the
  // workspace, uploads and outputs), and still refuses it as a write target.
  it('§10.5.55 (changed) the bare /mnt/user-data is readable, never writable; its sub-paths are both', () => {
    expect(() => validateLocalToolPath('/mnt/user-data', TD)).toThrow(SandboxPermissionError);
    expect(message(() => validateLocalToolPath('/mnt/user-data/', TD))).toContain(
      '/mnt/user-data itself is not writable; write below /mnt/user-data/workspace/',
    );
    expect(() => validateLocalToolPath('/mnt/user-data', TD, { readOnly: true })).not.toThrow();
    expect(() => validateLocalToolPath('/mnt/user-data/', TD, { readOnly: true })).not.toThrow();
    expect(() => validateLocalToolPath('/mnt/user-data/outputs/x', TD)).not.toThrow();
    expect(() =>
      validateLocalToolPath('/mnt/user-data/uploads/x', TD, { readOnly: true }),
    ).not.toThrow();
  });

  it('§10.5.56 skills and ACP paths are readable; writes fail with specific messages; a custom skills root replaces /mnt/skills', () => {
    expect(() =>
      validateLocalToolPath('/mnt/skills/public/x/SKILL.md', TD, { readOnly: true }),
    ).not.toThrow();
    expect(message(() => validateLocalToolPath('/mnt/skills/public/x/SKILL.md', TD))).toContain(
      'Write access to skills path is not allowed: /mnt/skills/public/x/SKILL.md',
    );
    expect(() =>
      validateLocalToolPath('/mnt/acp-workspace/a', TD, { readOnly: true }),
    ).not.toThrow();
    expect(message(() => validateLocalToolPath('/mnt/acp-workspace/a', TD))).toContain(
      'Write access to ACP workspace is not allowed: /mnt/acp-workspace/a',
    );
    const custom = { skillsContainerPath: '/custom/skills', readOnly: true };
    expect(() => validateLocalToolPath('/custom/skills/public/x', TD, custom)).not.toThrow();
    expect(message(() => validateLocalToolPath('/mnt/skills/public/x', TD, custom))).toContain(
      'Only paths under /mnt/user-data/, /custom/skills/,',
    );
    expect(
      message(() => validateLocalToolPath('/mnt/skills-extra/x', TD, { readOnly: true })),
    ).toContain('Only paths under');
    expect(
      message(() => validateLocalToolPath('/mnt/acp-workspace-extra/x', TD, { readOnly: true })),
    ).toContain('Only paths under');
  });

  it('§10.5.57 custom mounts: readable, read-only writes rejected, writable accepted, longest prefix wins, no prefix siblings', () => {
    const opts = { customMounts: MOUNTS };
    expect(() =>
      validateLocalToolPath('/mnt/code-read/a.py', TD, { ...opts, readOnly: true }),
    ).not.toThrow();
    expect(message(() => validateLocalToolPath('/mnt/code-read/a.py', TD, opts))).toContain(
      'Write access to read-only mount is not allowed: /mnt/code-read/a.py',
    );
    expect(() => validateLocalToolPath('/mnt/scratch/a', TD, opts)).not.toThrow();
    expect(() => validateLocalToolPath('/mnt/code-read/writable/a', TD, opts)).not.toThrow();
    expect(message(() => validateLocalToolPath('/mnt/code-read-extra/a', TD, opts))).toContain(
      'Only paths under',
    );
  });

  it('§10.5.59 missing thread data raises SandboxRuntimeError', () => {
    expect(() => validateLocalToolPath('/mnt/user-data/workspace/a', null)).toThrow(
      SandboxRuntimeError,
    );
    expect(message(() => validateLocalToolPath('/mnt/user-data/workspace/a', undefined))).toBe(
      'Thread data not available for local sandbox',
    );
  });
});

describe('resolveAndValidateUserDataPath and existingMounts', () => {
  let tmp: string;
  let td: ThreadDataPaths;
  beforeAll(async () => {
    tmp = await realpath(await mkdtemp(path.join(os.tmpdir(), 'sbx-validate-')));
    td = {
      workspacePath: path.join(tmp, 't', 'user-data', 'workspace'),
      uploadsPath: path.join(tmp, 't', 'user-data', 'uploads'),
      outputsPath: path.join(tmp, 't', 'user-data', 'outputs'),
    };
    for (const d of Object.values(td)) await mkdir(d as string, { recursive: true });
    await symlink(tmp, path.join(td.workspacePath!, 'up'));
  });
  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  it('§10.5.60 resolution lands inside the thread dir; escapes are rejected', async () => {
    expect(await resolveAndValidateUserDataPath('/mnt/user-data/workspace/a.txt', td)).toBe(
      path.join(td.workspacePath!, 'a.txt'),
    );
    await expect(
      resolveAndValidateUserDataPath('/mnt/user-data/workspace/../../../etc/passwd', td),
    ).rejects.toThrow('Access denied: path traversal detected');
    await expect(
      resolveAndValidateUserDataPath('/mnt/user-data/workspace/up/secret', td),
    ).rejects.toThrow('Access denied: path traversal detected');
    // The bare root maps to the user-data directory, which is none of the three allowed roots.
    await expect(resolveAndValidateUserDataPath('/mnt/user-data', td)).rejects.toThrow(
      SandboxPermissionError,
    );
    await expect(resolveAndValidateUserDataPath('/mnt/user-data/x', {})).rejects.toThrow(
      'No allowed local sandbox directories configured',
    );
  });

  it('§10.5.58 ignores configured mounts whose host path does not exist', async () => {
    const mounts = [
      { hostPath: td.workspacePath!, containerPath: '/mnt/a', readOnly: false },
      { hostPath: path.join(tmp, 'missing'), containerPath: '/mnt/b', readOnly: false },
    ];
    expect((await existingMounts(mounts)).map((m) => m.containerPath)).toEqual(['/mnt/a']);
  });
});
