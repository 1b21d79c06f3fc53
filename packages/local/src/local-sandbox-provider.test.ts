import {
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  realpath,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  InvalidArgumentError,
  ProviderClosedError,
  SandboxPermissionError,
  SandboxRuntimeError,
} from '@sbx/core';
import type { Logger } from '@sbx/core';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import defaultExport, { LocalSandboxProvider, createLocalProvider } from './index.js';

function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const push = (level: string) => (msg: string) => {
    lines.push(`${level}: ${msg}`);
  };
  return {
    lines,
    debug: push('debug'),
    info: push('info'),
    warn: push('warn'),
    error: push('error'),
  };
}

describe('LocalSandboxProvider', () => {
  let base: string;
  let extra: string;
  beforeAll(async () => {
    base = await realpath(await mkdtemp(path.join(os.tmpdir(), 'sbx-provider-')));
    extra = path.join(base, 'extra-mount');
    await mkdir(extra, { recursive: true });
    await writeFile(path.join(extra, 'code.py'), 'print(1)\n');
  });
  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
  });
  const provider = (opts: ConstructorParameters<typeof LocalSandboxProvider>[0] = {}) =>
    new LocalSandboxProvider({
      baseDir: base,
      // These cases are about the host provider itself; confinement has tests of its own.
      isolation: 'none',
      allowHostBash: true,
      logger: recordingLogger(),
      ...opts,
    });

  it('exports the class as default and a factory', () => {
    expect(defaultExport).toBe(LocalSandboxProvider);
    expect(createLocalProvider({ baseDir: base })).toBeInstanceOf(LocalSandboxProvider);
  });

  it('§10.8.90 ids: local:<user>:<thread>, default user, and the generic `local`', async () => {
    const p = provider();
    expect(await p.acquire({ threadId: 'alpha', userId: 'default' })).toBe('local:default:alpha');
    expect(await p.acquire({ threadId: 'alpha' })).toBe('local:default:alpha');
    expect(await p.acquire({ threadId: 'alpha', userId: 'alice' })).toBe('local:alice:alpha');
    expect(await p.acquire()).toBe('local');
    expect(await p.acquire({})).toBe('local');
    expect(p.get('local')?.id).toBe('local');
  });

  it('creates the thread directories and skills views on acquire', async () => {
    const p = provider();
    await p.acquire({ threadId: 'dirs', userId: 'bob' });
    const l = p.threadLayout('bob', 'dirs');
    for (const d of [l.workspacePath, l.uploadsPath, l.outputsPath, l.acpWorkspacePath]) {
      expect((await stat(d)).isDirectory()).toBe(true);
    }
    for (const d of [
      'skills_view/public',
      'users/bob/skills_view/custom',
      'users/bob/skills_view/integrations',
    ]) {
      expect((await stat(path.join(base, d))).isDirectory()).toBe(true);
    }
    expect(l.workspacePath).toBe(path.join(base, 'users/bob/threads/dirs/user-data/workspace'));
  });

  it('§10.8.91 a per-thread sandbox honours /mnt/user-data for every operation', async () => {
    const p = provider();
    const sb = p.get(await p.acquire({ threadId: 't91', userId: 'u' }))!;
    await sb.writeFile('/mnt/user-data/workspace/a.txt', 'hello\n');
    expect(await sb.readFile('/mnt/user-data/workspace/a.txt')).toBe('hello\n');
    expect(await sb.listDir('/mnt/user-data/workspace')).toEqual([
      '/mnt/user-data/workspace/a.txt',
    ]);
    expect(await sb.executeCommand('cat /mnt/user-data/workspace/a.txt')).toBe('hello\n');
    expect((await sb.glob('/mnt/user-data', '*.txt')).paths).toEqual([
      '/mnt/user-data/workspace/a.txt',
    ]);
    expect((await sb.grep('/mnt/user-data', 'hello')).matches[0]?.path).toBe(
      '/mnt/user-data/workspace/a.txt',
    );
    await sb.updateFile('/mnt/user-data/uploads/b.bin', new Uint8Array([7]));
    expect(Array.from(await sb.downloadFile('/mnt/user-data/uploads/b.bin'))).toEqual([7]);
    expect(
      await readFile(path.join(p.threadLayout('u', 't91').workspacePath, 'a.txt'), 'utf8'),
    ).toBe('hello\n');
  });

  it('§10.8.92 threads and users are isolated; agent-written sets are per sandbox', async () => {
    const p = provider();
    const a = p.get(await p.acquire({ threadId: 'shared', userId: 'alice' }))!;
    const b = p.get(await p.acquire({ threadId: 'shared', userId: 'bob' }))!;
    const c = p.get(await p.acquire({ threadId: 'other', userId: 'alice' }))!;
    await a.writeFile('/mnt/user-data/workspace/s.txt', 'alice /mnt/user-data/outputs\n');
    for (const other of [b, c]) {
      await expect(other.readFile('/mnt/user-data/workspace/s.txt')).rejects.toMatchObject({
        kind: 'ENOENT',
      });
    }
    expect(a.agentWrittenPaths.size).toBe(1);
    expect(b.agentWrittenPaths.size).toBe(0);
  });

  it('§10.8.93 get returns the same instance; unknown ids give undefined; release keeps it', async () => {
    const p = provider();
    const id = await p.acquire({ threadId: 't93' });
    const sb = p.get(id);
    expect(p.get(id)).toBe(sb);
    expect(p.get('local:default:never')).toBeUndefined();
    expect(p.get('something-else')).toBeUndefined();
    await p.release(id);
    expect(p.get(id)).toBe(sb);
  });

  it('§10.8.94 reset clears generic and per-thread caches, twice is safe, refuses further use; a new provider serves the thread and new mounts', async () => {
    const p = provider();
    const id = await p.acquire({ threadId: 't94' });
    const before = p.get(id);
    await before!.writeFile('/mnt/user-data/workspace/kept.txt', 'still here');
    await p.reset();
    await p.reset();
    expect(p.get(id)).toBeUndefined();
    await expect(p.acquire({ threadId: 't94' })).rejects.toBeInstanceOf(ProviderClosedError);
    const withMount = provider({
      mounts: [{ hostPath: extra, containerPath: '/mnt/code', readOnly: true }],
    });
    const sb = withMount.get(await withMount.acquire({ threadId: 't94' }))!;
    expect(sb).not.toBe(before);
    expect(await sb.readFile('/mnt/code/code.py')).toBe('print(1)\n');
    // The host directories outlive the instance: the replacement finds the thread's files.
    expect(await sb.readFile('/mnt/user-data/workspace/kept.txt')).toBe('still here');
  });

  it('§10.8.95 concurrent acquires of one thread give one sandbox; distinct threads distinct ones', async () => {
    const p = provider();
    const ids = await Promise.all(Array.from({ length: 8 }, () => p.acquire({ threadId: 'race' })));
    expect(new Set(ids).size).toBe(1);
    expect(p.cachedThreadCount).toBe(1);
    const sandbox = p.get(ids[0]!);
    await Promise.all(Array.from({ length: 8 }, () => p.acquire({ threadId: 'race' })));
    expect(p.get(ids[0]!)).toBe(sandbox);
    const six = await Promise.all(
      Array.from({ length: 6 }, (_, i) => p.acquire({ threadId: `d${i}` })),
    );
    expect(new Set(six).size).toBe(6);
    expect(p.cachedThreadCount).toBe(7);
  });

  it('§10.8.96 LRU cap 3 keeps the last 3; get promotes; evicted ids give undefined', async () => {
    const p = provider({ maxCachedThreads: 3 });
    for (const t of ['t1', 't2', 't3', 't4', 't5']) await p.acquire({ threadId: t });
    expect(p.get('local:default:t1')).toBeUndefined();
    expect(p.get('local:default:t2')).toBeUndefined();
    expect(p.get('local:default:t3')).toBeDefined(); // promoted: t4 is now least recent
    await p.acquire({ threadId: 't6' });
    expect(p.get('local:default:t4')).toBeUndefined();
    expect(p.get('local:default:t3')).toBeDefined();
    expect(p.get('local:default:t5')).toBeDefined();
    expect(p.cachedThreadCount).toBe(3);
  });

  it('§10.8.97 static mounts: validated, trailing slash stripped, reserved paths and missing hosts skipped with logs', async () => {
    const logger = recordingLogger();
    const p = provider({
      logger,
      skillsContainerPath: '/custom-skills/',
      mounts: [
        { hostPath: extra, containerPath: '/custom-skills/nested/' },
        { hostPath: 'relative/dir', containerPath: '/mnt/rel' },
        { hostPath: extra, containerPath: 'not-absolute' },
        { hostPath: extra, containerPath: '/custom-skills/public/x' },
        { hostPath: extra, containerPath: '/mnt/user-data/x' },
        { hostPath: extra, containerPath: '/mnt/acp-workspace' },
        { hostPath: path.join(base, 'missing'), containerPath: '/mnt/missing' },
      ],
    });
    expect(p.staticMappings.map((m) => m.containerPath)).toEqual([
      '/custom-skills/public',
      '/custom-skills/nested',
    ]);
    expect(logger.lines.filter((l) => l.startsWith('warn:'))).toHaveLength(5);
    const missing = logger.lines.find((l) => l.startsWith('error:'))!;
    expect(missing).toContain(path.join(base, 'missing'));
    expect(missing).toContain('/mnt/missing');
    expect(missing.toLowerCase()).toContain('docker');
    expect(missing).toContain('gateway');
    expect(missing).toContain('docker-compose');
  });

  it('§10.8.98 per-user skill mounts point at each user’s own views and are read-only', async () => {
    const p = provider();
    const a = p.get(await p.acquire({ threadId: 't98', userId: 'alice' }))!;
    const b = p.get(await p.acquire({ threadId: 't98', userId: 'bob' }))!;
    const integ = (sb: typeof a) =>
      sb.mappings.find((m) => m.containerPath === '/mnt/skills/integrations')!;
    expect(integ(a).hostPath).toBe(path.join(base, 'users/alice/skills_view/integrations'));
    expect(integ(b).hostPath).toBe(path.join(base, 'users/bob/skills_view/integrations'));
    expect(integ(a).readOnly).toBe(true);
    await writeFile(path.join(base, 'users/alice/skills_view/integrations/x.md'), 'x');
    expect(await a.readFile('/mnt/skills/integrations/x.md')).toBe('x');
    await expect(a.writeFile('/mnt/skills/integrations/y.md', 'y')).rejects.toMatchObject({
      kind: 'EROFS',
    });
    expect(await a.listDir('/mnt/skills', { maxDepth: 1 })).toEqual([
      '/mnt/skills/custom/',
      '/mnt/skills/integrations/',
      '/mnt/skills/legacy/',
      '/mnt/skills/public/',
    ]);
  });

  it('a policy-scoped run mounts one read-only /mnt/skills root at the thread view', async () => {
    const p = provider({ allowHostBash: false });
    expect(p.supportsAgentSkillIsolation).toBe(true);
    const id = await p.acquire({
      threadId: 'pol',
      userId: 'alice',
      skillPolicy: { allowedSkills: ['a'] },
    });
    const sb = p.get(id)!;
    const skills = sb.mappings.filter((m) => m.containerPath.startsWith('/mnt/skills'));
    expect(skills).toEqual([
      {
        containerPath: '/mnt/skills',
        hostPath: path.join(base, 'users/alice/threads/pol/skills_view'),
        readOnly: true,
      },
    ]);
    // An unrestricted run of the same thread gets its own sandbox (issue: it used to replace the
    // policy run's, flipping its isolation); both remember what the agent wrote in the thread.
    await sb.writeFile('/mnt/user-data/workspace/w.txt', 'x');
    const sharedId = await p.acquire({ threadId: 'pol', userId: 'alice' });
    expect(sharedId).not.toBe(id);
    const shared = p.get(sharedId)!;
    expect(shared).not.toBe(sb);
    expect(shared.mappings.some((m) => m.containerPath === '/mnt/skills/public')).toBe(true);
    expect(shared.agentWrittenPaths).toBe(sb.agentWrittenPaths);
    // The policy run's sandbox is untouched: still cached, still showing only its projection.
    expect(p.get(id)).toBe(sb);
    expect(
      await p.acquire({ threadId: 'pol', userId: 'alice', skillPolicy: { allowedSkills: ['a'] } }),
    ).toBe(id);
    expect(p.get(id)!.mappings.filter((m) => m.containerPath.startsWith('/mnt/skills'))).toEqual(
      skills,
    );
  });

  it('a persisted id is honoured only for its own (user, thread)', async () => {
    const p = provider({ allowHostBash: false });
    const bob = await p.acquire({ threadId: 'b1', userId: 'bob' });
    expect(p.sandboxBelongsTo(bob, { userId: 'bob', threadId: 'b1' })).toBe(true);
    expect(p.sandboxBelongsTo(bob, { userId: 'alice', threadId: 'b1' })).toBe(false);
    expect(p.sandboxBelongsTo(bob, { userId: 'bob', threadId: 'b2' })).toBe(false);
    // The generic sandbox serves host paths unconfined: never a thread's.
    expect(p.sandboxBelongsTo('local', { userId: 'bob', threadId: 'b1' })).toBe(false);
  });

  it('isolation is reported only while host bash is off; a policy run then fails closed', async () => {
    const p = provider({ allowHostBash: true });
    expect(p.supportsAgentSkillIsolation).toBe(false);
    await expect(
      p.acquire({ threadId: 'x', skillPolicy: { allowedSkills: [] } }),
    ).rejects.toBeInstanceOf(SandboxRuntimeError);
    expect(p.cachedThreadCount).toBe(0);
    expect(p.usesThreadDataMounts).toBe(true);
    expect(p.needsUploadPermissionAdjustment).toBe(false);
  });

  it('sandboxes of a provider with host bash off refuse commands', async () => {
    const p = provider({ allowHostBash: false });
    const sb = p.get(await p.acquire({ threadId: 'nobash' }))!;
    await expect(sb.executeCommand('true')).rejects.toMatchObject({ code: 'HOST_BASH_DISABLED' });
  });

  it('rejects unsafe user and thread ids', async () => {
    const p = provider();
    for (const bad of ['..', '', 'a/b', 'a\0b', '.']) {
      await expect(p.acquire({ threadId: bad })).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(p.acquire({ threadId: 't', userId: bad })).rejects.toBeInstanceOf(
        InvalidArgumentError,
      );
    }
    await expect(p.acquire({ threadId: 't', userId: 'a:b' })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
  });

  it('takes its settings from a parsed configuration; explicit options win', async () => {
    const fromConfig = new LocalSandboxProvider({
      config: {
        baseDir: path.join(base, 'from-config'),
        allowHostBash: true,
        bashCommandTimeout: 5,
        mounts: [{ hostPath: extra, containerPath: '/mnt/code', readOnly: true }],
        skills: { containerPath: '/mnt/skills' },
        local: { max_cached_threads: 2 },
      },
      logger: recordingLogger(),
    });
    expect(fromConfig.baseDir).toBe(path.join(base, 'from-config'));
    expect(fromConfig.allowHostBash).toBe(true);
    expect(fromConfig.staticMappings.map((m) => m.containerPath)).toContain('/mnt/code');
    for (const t of ['a', 'b', 'c']) await fromConfig.acquire({ threadId: t });
    expect(fromConfig.cachedThreadCount).toBe(2);
    const overridden = new LocalSandboxProvider({
      config: { baseDir: path.join(base, 'from-config'), allowHostBash: true },
      allowHostBash: false,
      baseDir: path.join(base, 'explicit'),
    });
    expect(overridden.allowHostBash).toBe(false);
    expect(overridden.baseDir).toBe(path.join(base, 'explicit'));
    expect(
      () => new LocalSandboxProvider({ config: { local: { max_cached_threads: 0 } } }),
    ).toThrow(/max_cached_threads/);
  });

  it('falls back to SBX_HOME, then ./.sbx, resolved at construction', () => {
    expect(new LocalSandboxProvider({ env: { SBX_HOME: path.join(base, 'home') } }).baseDir).toBe(
      path.join(base, 'home'),
    );
    expect(new LocalSandboxProvider({ env: {} }).baseDir).toBe(path.resolve('.sbx'));
  });

  it('the generic sandbox has no user-data mounts', async () => {
    const p = provider();
    const generic = p.get(await p.acquire())!;
    expect(generic.mappings.map((m) => m.containerPath)).toEqual(['/mnt/skills/public']);
    expect(await generic.executeCommand('echo generic')).toBe('generic\n');
    await expect(generic.downloadFile('/etc/hostname')).rejects.toBeInstanceOf(
      SandboxPermissionError,
    );
  });

  it('property: file operations of a thread never touch anything outside its mounts', async () => {
    const p = provider();
    const victim = p.get(await p.acquire({ threadId: 'victim', userId: 'alice' }))!;
    await victim.writeFile('/mnt/user-data/workspace/private.txt', 'alice only');
    const sb = p.get(await p.acquire({ threadId: 'attacker', userId: 'mallory' }))!;
    const ws = p.threadLayout('mallory', 'attacker').workspacePath;
    const canary = path.join(base, 'canary');
    await mkdir(canary, { recursive: true });
    await symlink(canary, path.join(ws, 'to-canary'));
    await symlink(p.threadLayout('alice', 'victim').workspacePath, path.join(ws, 'to-victim'));
    await symlink(path.join(canary, 'planted'), path.join(ws, 'dangling'));
    const snapshot = async () => ({
      canary: (await readdir(canary)).sort(),
      victim: (await readdir(p.threadLayout('alice', 'victim').workspacePath)).sort(),
    });
    const before = await snapshot();
    const segment = fc.constantFrom(
      '..',
      '.',
      'to-canary',
      'to-victim',
      'dangling',
      '%2e%2e',
      '\u2025',
      '\uff0e\uff0e',
      'a',
      'x.txt',
      '',
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(
          '/mnt/user-data/workspace',
          '/mnt/user-data',
          '/mnt/acp-workspace',
          '/mnt/skills/custom',
        ),
        fc.array(segment, { minLength: 1, maxLength: 4 }),
        fc.constantFrom('write', 'append', 'update', 'read', 'list'),
        async (root, segments, op) => {
          const target = [root, ...segments].join('/');
          try {
            if (op === 'write') await sb.writeFile(target, 'pwned');
            else if (op === 'append') await sb.writeFile(target, 'pwned', { append: true });
            else if (op === 'update') await sb.updateFile(target, new Uint8Array([1]));
            else if (op === 'read') expect(await sb.readFile(target)).not.toBe('alice only');
            else for (const e of await sb.listDir(target)) expect(e.startsWith('/mnt/')).toBe(true);
          } catch (err) {
            expect((err as { code?: unknown }).code).toMatch(/^SANDBOX_|^INVALID_ARGUMENT$/);
          }
        },
      ),
      { numRuns: 300 },
    );
    expect(await snapshot()).toEqual(before);
  });
});
