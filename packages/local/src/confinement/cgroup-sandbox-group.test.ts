// What a group writes to its control files, on a directory tree laid out like a cgroup file
// system (each new group gets the control files the kernel would create). The kernel's own
// behaviour is tested in cgroup-real.test.ts; this covers the v2 files a v1 machine cannot show.
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { recordingLogger } from '@sbx/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CgroupLayout } from './cgroup-detect.js';
import { resolveConfinementLimits } from './cgroup-limits.js';
import { createGroup } from './cgroup-sandbox-group.js';

const V2_FILES = [
  'cgroup.procs',
  'pids.max',
  'memory.max',
  'memory.swap.max',
  'memory.events',
  'cpu.max',
];
const V1_FILES: Record<string, string[]> = {
  pids: ['cgroup.procs', 'pids.max'],
  memory: [
    'cgroup.procs',
    'memory.limit_in_bytes',
    'memory.memsw.limit_in_bytes',
    'memory.oom_control',
    'memory.failcnt',
  ],
  cpu: ['cgroup.procs', 'cpu.cfs_period_us', 'cpu.cfs_quota_us'],
};

describe('createGroup control files', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'cgroupfs-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const limits = resolveConfinementLimits({
    pids: 40,
    memoryBytes: 64 * 1024 * 1024,
    cpuMillicores: 500,
  });
  const read = (file: string): Promise<string> => readFile(path.join(root, file), 'utf8');

  it('v2: pids.max, memory.max with swap off, cpu.max as quota and period; OOM kills from memory.events', async () => {
    const layout: CgroupLayout = {
      version: 'v2',
      dir: root,
      placement: 'own',
      controllers: ['pids', 'memory', 'cpu'],
      kill: true,
      gatewayMustMove: false,
    };
    const group = await createGroup({
      layout,
      parentOf: (top) => top,
      segment: 'sb-x',
      name: 'local:u:t',
      limits,
      log: recordingLogger(),
      mkdir: async (dir) => {
        await mkdir(dir);
        for (const f of V2_FILES) await writeFile(path.join(dir, f), '');
      },
    });
    expect(await read('sb-x/pids.max')).toBe('40');
    expect(await read('sb-x/memory.max')).toBe(String(64 * 1024 * 1024));
    expect(await read('sb-x/memory.swap.max')).toBe('0');
    expect(await read('sb-x/cpu.max')).toBe('50000 100000');
    expect(group.limitsInForce).toEqual({
      pids: 40,
      memoryBytes: 64 * 1024 * 1024,
      swapLimited: true,
      cpuMillicores: 500,
    });
    await writeFile(
      path.join(root, 'sb-x/memory.events'),
      'low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\noom_group_kill 0\n',
    );
    expect(await group.memoryEvents()).toEqual({ oomKills: 1, limitHits: 7 });
    expect(await group.wasOomKilled()).toBe(true);
  });

  it('v1: the memsw limit follows the memory limit; OOM kills from memory.oom_control', async () => {
    for (const c of ['pids', 'memory', 'cpu']) await mkdir(path.join(root, c));
    const layout: CgroupLayout = {
      version: 'v1',
      hierarchies: ['pids', 'memory', 'cpu'].map((c) => ({
        controller: c as 'pids',
        dir: path.join(root, c),
      })),
      controllers: ['pids', 'memory', 'cpu'],
      freezer: false,
    };
    const group = await createGroup({
      layout,
      parentOf: (top) => top,
      segment: 'sb-y',
      name: 'local:u:t',
      limits,
      log: recordingLogger(),
      mkdir: async (dir) => {
        await mkdir(dir);
        for (const f of V1_FILES[path.basename(path.dirname(dir))] ?? [])
          await writeFile(path.join(dir, f), '');
      },
    });
    expect(await read('memory/sb-y/memory.limit_in_bytes')).toBe(String(64 * 1024 * 1024));
    expect(await read('memory/sb-y/memory.memsw.limit_in_bytes')).toBe(String(64 * 1024 * 1024));
    expect(await read('cpu/sb-y/cpu.cfs_quota_us')).toBe('50000');
    expect(await read('cpu/sb-y/cpu.cfs_period_us')).toBe('100000');
    expect(await read('pids/sb-y/pids.max')).toBe('40');
    await writeFile(
      path.join(root, 'memory/sb-y/memory.oom_control'),
      'oom_kill_disable 0\nunder_oom 0\noom_kill 2\n',
    );
    await writeFile(path.join(root, 'memory/sb-y/memory.failcnt'), '31\n');
    expect(await group.memoryEvents()).toEqual({ oomKills: 2, limitHits: 31 });
  });

  it('leaves nothing behind when a limit cannot be written', async () => {
    const layout: CgroupLayout = {
      version: 'v2',
      dir: root,
      placement: 'own',
      controllers: ['pids', 'memory'],
      kill: true,
      gatewayMustMove: false,
    };
    await expect(
      createGroup({
        layout,
        parentOf: (top) => top,
        segment: 'sb-z',
        name: 'local:u:t',
        limits,
        log: recordingLogger(),
        // No memory.max: the kernel refused the controller.
        mkdir: async (dir) => {
          await mkdir(dir);
        },
      }),
    ).rejects.toMatchObject({ code: 'CONFINEMENT_CGROUP' });
    expect(await readdir(root)).toEqual([]);
  });
});
