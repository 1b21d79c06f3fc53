import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SandboxPermissionError } from '@sbx/core';
import { sharedSkillsViewPath } from '@sbx/core/internal';
import type { SkillProjectionCategory } from '@sbx/core';
import { settle, track } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { SKILLS_SIGNATURE_FILE, assertSafeSkillsRoot } from './skill-sync.js';
import { makeHarness } from './test-support.js';
import type { Harness } from './test-support.js';
import { sdkError } from './testing/fake-e2b-errors.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
async function harness(options: Parameters<typeof makeHarness>[0] = {}): Promise<Harness> {
  const h = await makeHarness(options);
  cleanups.push(h.cleanup);
  return h;
}
const T = { userId: 'u1', threadId: 't1' };

async function projection(files: Record<string, string>): Promise<SkillProjectionCategory[]> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'sbx-e2b-proj-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  const out: SkillProjectionCategory[] = [];
  for (const category of ['public', 'custom', 'legacy', 'integrations'] as const) {
    await mkdir(path.join(root, category), { recursive: true });
    out.push({ category, hostDir: path.join(root, category) });
  }
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, rel)), { recursive: true });
    await writeFile(path.join(root, rel), content);
  }
  return out;
}

const run = async (h: Harness, id: string, cmd: string) => h.provider.get(id)!.executeCommand(cmd);

describe('agent skill sync (authz-leases §6, remote-providers §2.9)', () => {
  it('rejects non-canonical, protected, home and operating-system roots', () => {
    for (const bad of [
      'relative/skills',
      '/mnt/skills/',
      '/mnt/./skills',
      '/',
      '/mnt',
      '/etc/skills',
      '/usr/share/skills',
      '/mnt/user-data/skills',
      '/home/user',
      '/home/user/skills',
      '/mnt/acp-workspace',
    ]) {
      expect(() => assertSafeSkillsRoot(bad, '/home/user'), bad).toThrow(SandboxPermissionError);
    }
    expect(() => assertSafeSkillsRoot('/mnt/skills', '/home/user')).not.toThrow();
    expect(() => assertSafeSkillsRoot('/opt/agent-skills', '/home/user')).not.toThrow();
  });

  it('refuses an operating-system root before touching the VM', async () => {
    // `/etc/...` is already refused by config validation; `/usr/...` passes it (image layouts
    // differ) and must be stopped by this runtime guard.
    const h = await harness({ config: { skills: { container_path: '/usr/skills' } } });
    const id = await h.provider.acquire({ ...T, skillPolicy: { allowedSkills: [] } });
    const before = h.fake.calls.length;
    await expect(
      h.provider.syncAgentSkills(id, { ...T, projection: await projection({}), signature: 'sig' }),
    ).rejects.toThrow(/operating-system tree/);
    expect(h.fake.calls.slice(before)).toEqual([]);
  });

  it('refuses a symlinked root before deleting anything', async () => {
    const h = await harness();
    const id = await h.provider.acquire({ ...T, skillPolicy: { allowedSkills: [] } });
    await run(
      h,
      id,
      'mkdir -p /home/user/elsewhere/public && echo keep > /home/user/elsewhere/public/x && ln -sfn /home/user/elsewhere /mnt/skills',
    );
    await expect(
      h.provider.syncAgentSkills(id, { ...T, projection: await projection({}), signature: 'sig' }),
    ).rejects.toThrow(/symlinked root/);
    expect(await run(h, id, 'cat /home/user/elsewhere/public/x')).toBe('keep\n');
  });

  it('rebuilds the four categories on every sync, deletes legacy markers, keeps unmanaged trees', async () => {
    const h = await harness();
    const id = await h.provider.acquire({ ...T, skillPolicy: { allowedSkills: ['a'] } });
    await run(
      h,
      id,
      'mkdir -p /mnt/skills/public/stale /mnt/skills/other && echo s > /mnt/skills/public/stale/SKILL.md && echo o > /mnt/skills/other/x && echo old > /mnt/skills/.skills-signature',
    );
    const proj = await projection({
      'public/a/SKILL.md': 'skill a',
      'custom/b/SKILL.md': 'skill b',
    });
    await h.provider.syncAgentSkills(id, { ...T, projection: proj, signature: 'sig-1' });
    const listing = await run(h, id, 'cd /mnt/skills && find . -type f | sort');
    expect(listing).toBe(
      `./${SKILLS_SIGNATURE_FILE}\n./custom/b/SKILL.md\n./other/x\n./public/a/SKILL.md\n`,
    );
    expect(await h.provider.get(id)!.readFile(`/mnt/skills/${SKILLS_SIGNATURE_FILE}`)).toBe(
      'sig-1\n',
    );
    // Second sync with a narrower projection: everything managed is rebuilt, not merged.
    await h.provider.syncAgentSkills(id, {
      ...T,
      projection: await projection({ 'public/c/SKILL.md': 'c' }),
      signature: 'sig-2',
    });
    expect(await run(h, id, 'cd /mnt/skills && find public custom -type f | sort')).toBe(
      'public/c/SKILL.md\n',
    );
  });

  it('holds the (user, thread, skills root) serializer: overlapping syncs never interleave', async () => {
    const h = await harness();
    const id = await h.provider.acquire({ ...T, skillPolicy: { allowedSkills: [] } });
    h.fake.gate.pause('write', { times: 1 });
    const first = h.provider.syncAgentSkills(id, {
      ...T,
      projection: await projection({ 'public/a/SKILL.md': 'a' }),
      signature: 's1',
    });
    const held = await h.fake.gate.nextCall('write');
    const runsBefore = h.fake.callsOf('run', id).length;
    const second = track(
      h.provider.syncAgentSkills(id, {
        ...T,
        projection: await projection({ 'public/b/SKILL.md': 'b' }),
        signature: 's2',
      }),
    );
    const release = track(h.provider.release(id));
    await settle();
    expect(second.settled).toBe(false);
    expect(release.settled).toBe(false);
    expect(h.fake.callsOf('run', id)).toHaveLength(runsBefore); // the second wipe has not started
    await held.release();
    await first;
    await second.promise;
    await release.promise;
  });

  it('§8.2.22 an unrestricted create uploads the (enabled-only) shared skill views; a policy create skips them', async () => {
    const h = await harness();
    const publicView = sharedSkillsViewPath(h.baseDir, 'u1', 'public');
    await mkdir(path.join(publicView, 'pdf'), { recursive: true });
    await writeFile(path.join(publicView, 'pdf', 'SKILL.md'), 'pdf skill');
    const shared = await h.provider.acquire(T);
    expect(await h.provider.get(shared)!.readFile('/mnt/skills/public/pdf/SKILL.md')).toBe(
      'pdf skill',
    );
    const scoped = await h.provider.acquire({
      userId: 'u1',
      threadId: 't2',
      skillPolicy: { allowedSkills: [] },
    });
    expect(
      await run(h, scoped, 'test -e /mnt/skills/public/pdf/SKILL.md && echo yes || echo no'),
    ).toBe('no\n');
    expect(h.provider.supportsAgentSkillIsolation).toBe(true);
  });

  it('§8.2.33 a projection that cannot be planned uploads none of itself; configured mounts still upload', async () => {
    const mountSource = await mkdtemp(path.join(os.tmpdir(), 'sbx-e2b-mount-'));
    cleanups.push(() => rm(mountSource, { recursive: true, force: true }));
    await writeFile(path.join(mountSource, 'data.txt'), 'operator data');
    const h = await harness({
      config: {
        mounts: [{ host_path: mountSource, container_path: '/mnt/data', read_only: false }],
      },
    });
    const publicView = sharedSkillsViewPath(h.baseDir, 'u1', 'public');
    await mkdir(path.join(publicView, 'pdf'), { recursive: true });
    await writeFile(path.join(publicView, 'pdf', 'SKILL.md'), 'pdf skill');
    // A file where the user's views directory belongs: inspecting the per-user categories fails
    // with ENOTDIR, so the projection as a whole is unknown.
    const customView = sharedSkillsViewPath(h.baseDir, 'u1', 'custom');
    await mkdir(path.dirname(path.dirname(customView)), { recursive: true });
    await writeFile(path.dirname(customView), 'not a directory');
    const id = await h.provider.acquire(T);
    expect(await h.provider.get(id)!.readFile('/mnt/data/data.txt')).toBe('operator data');
    expect(await run(h, id, 'test -e /mnt/skills/public/pdf/SKILL.md && echo yes || echo no')).toBe(
      'no\n',
    );
    expect(h.logger.text('warn')).toContain('Planning the skills projection failed');
  });

  it('refuses a sync for a sandbox that is not active for the thread', async () => {
    const h = await harness();
    const id = await h.provider.acquire(T);
    await expect(
      h.provider.syncAgentSkills(id, {
        userId: 'u1',
        threadId: 'other',
        projection: [],
        signature: 's',
      }),
    ).rejects.toThrow(/not active for this thread/);
  });

  it('#16 item 6: a projection file that cannot be uploaded fails the sync, and no signature marks it current', async () => {
    const h = await harness();
    const id = await h.provider.acquire({ ...T, skillPolicy: { allowedSkills: ['a'] } });
    const proj = await projection({ 'public/a/SKILL.md': 'skill a', 'custom/b/SKILL.md': 'b' });
    h.fake.fail('write', sdkError('SandboxError', 'disk full'), { times: 1 });
    await expect(
      h.provider.syncAgentSkills(id, { ...T, projection: proj, signature: 'sig-bad' }),
    ).rejects.toThrow();
    expect(
      await run(h, id, `cat /mnt/skills/${SKILLS_SIGNATURE_FILE} 2>/dev/null || echo none`),
    ).toBe('none\n');
  });
});
