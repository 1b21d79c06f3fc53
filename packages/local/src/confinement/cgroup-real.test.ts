// Real cgroups of this machine: a fork loop stopped by its pids limit, a memory hog killed by its
// memory limit, and destroy() ending everything in a group. Each workload bounds itself (100
// forks at most, 300 MiB at most), so a limit that fails cannot hurt the machine. Without a
// writable cgroup hierarchy the tests skip with the reason, unless SBX_REQUIRE_CGROUPS=1.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { recordingLogger } from '@sbx/core/testing';
import { readFile } from 'node:fs/promises';
import {
  detectCgroups,
  parseMountinfo,
  parseProcCgroup,
  type CgroupV2Layout,
} from './cgroup-detect.js';
import { openCgroupHost, type CgroupHost } from './cgroup-host.js';
import { resolveConfinementLimits } from './cgroup-limits.js';
import type { SandboxCgroup } from './cgroup-sandbox-group.js';
import { currentGatewayIdentity, gatewayIsGone } from './cgroup-names.js';

const detection = await detectCgroups();
const required = process.env.SBX_REQUIRE_CGROUPS === '1';
const has = (c: 'pids' | 'memory') => detection.layout?.controllers.includes(c) ?? false;
const skipReason = (c: 'pids' | 'memory'): string | undefined =>
  has(c)
    ? undefined
    : `no writable cgroup ${c} controller: ${detection.notes.join('; ') || 'none'}`;

/** Skips with the reason printed, or fails when cgroups are required here. */
function cgroupIt(controller: 'pids' | 'memory', name: string, body: () => Promise<void>): void {
  const reason = skipReason(controller);
  if (reason && !required) {
    it.skip(`${name} (skipped: ${reason})`, body);
    return;
  }
  it(
    name,
    async () => {
      if (reason) throw new Error(`SBX_REQUIRE_CGROUPS=1 but ${reason}`);
      await body();
    },
    60_000,
  );
}

interface Gated {
  readonly child: ChildProcess;
  readonly stdout: () => string;
  readonly stderr: () => string;
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Lets the script run (after its pid has been moved into the group). */
  open(): void;
  /** Resolves once stdout holds `count` lines `line` (each printed after a fork it vouches for). */
  printed(line: string, count: number): Promise<void>;
}

/** A shell that waits on stdin before running `script`, so it is moved before it can fork. */
function gated(script: string): Gated {
  const child = spawn('/bin/sh', ['-c', `read gate; ${script}`], { stdio: 'pipe' });
  let out = '';
  let err = '';
  const waiters = new Set<() => void>();
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    for (const check of [...waiters]) check();
  });
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exit,
    open: () => child.stdin.end('go\n'),
    printed: (line, count) =>
      new Promise<void>((resolve, reject) => {
        const check = (): void => {
          if (out.split('\n').filter((l) => l === line).length >= count) {
            waiters.delete(check);
            resolve();
          }
        };
        waiters.add(check);
        check();
        void exit.then(() => {
          if (waiters.delete(check))
            reject(new Error(`exited before printing ${line} x${count}: ${out}`));
        });
      }),
  };
}

function alive(pid: number): boolean {
  return existsSync(`/proc/${pid}`) && !/^\S+ \(.*\) [ZX]/.test(procStat(pid));
}

function procStat(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return '';
  }
}

describe('sandbox cgroups on this machine', () => {
  const log = recordingLogger();
  let host: CgroupHost | undefined;
  const started: ChildProcess[] = [];

  afterEach(async () => {
    await host?.close();
    host = undefined;
    for (const c of started.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  });

  const group = async (
    name: string,
    limits: Parameters<typeof resolveConfinementLimits>[0],
  ): Promise<SandboxCgroup> => {
    host ??= await openCgroupHost({ log });
    return host.createSandboxCgroup(name, resolveConfinementLimits(limits));
  };

  cgroupIt(
    'pids',
    'a fork loop stops at its pids limit and another tenant still forks',
    async () => {
      const bomb = await group('local:u:fork-bomb', { pids: 20 });
      const other = await group('local:u:other-tenant', { pids: 20 });
      expect(bomb.limitsInForce.pids).toBe(20);
      const loop = gated(
        'i=0; while [ $i -lt 100 ]; do sleep 60 & i=$((i+1)); done; echo forked $i',
      );
      started.push(loop.child);
      await bomb.addPid(loop.child.pid ?? 0);
      loop.open();
      const exit = await loop.exit;
      // The loop never got its 100 children: the shell gave up at the limit.
      expect(loop.stdout()).not.toContain('forked 100');
      expect(exit.code).not.toBe(0);
      expect(loop.stderr()).toMatch(/fork/i);
      const members = await bomb.members();
      expect(members.length).toBeGreaterThan(0);
      expect(members.length).toBeLessThanOrEqual(20);

      const neighbour = gated('sleep 0 & wait; echo neighbour ok');
      started.push(neighbour.child);
      await other.addPid(neighbour.child.pid ?? 0);
      neighbour.open();
      expect((await neighbour.exit).code).toBe(0);
      expect(neighbour.stdout()).toContain('neighbour ok');

      await bomb.destroy();
      expect(members.filter(alive)).toEqual([]);
      for (const dir of bomb.dirs) expect(existsSync(dir)).toBe(false);
    },
  );

  cgroupIt('pids', 'destroy ends processes that left their session and process group', async () => {
    const g = await group('local:u:escapes', { pids: 64 });
    // setsid and a double fork: neither a process group kill nor a session kill would reach them.
    const escaper = gated(
      "setsid sh -c 'sleep 60 & echo forked; exec sleep 60' & (sh -c 'sleep 60 & echo forked' &); echo forked; exec sleep 60",
    );
    started.push(escaper.child);
    await g.addPid(escaper.child.pid ?? 0);
    escaper.open();
    // Each "forked" is printed after the fork it vouches for.
    await escaper.printed('forked', 3);
    const members = await g.members();
    expect(members.length).toBeGreaterThanOrEqual(4);
    await g.destroy();
    expect(members.filter(alive)).toEqual([]);
    expect((await escaper.exit).signal).toBe('SIGKILL');
    await g.destroy(); // idempotent
  });

  cgroupIt(
    'memory',
    'a memory hog is killed by its memory limit and reported as out of memory',
    async () => {
      const g = await group('local:u:memory-hog', { memoryBytes: 64 * 1024 * 1024, pids: 32 });
      expect(g.limitsInForce.memoryBytes).toBe(64 * 1024 * 1024);
      expect(await g.wasOomKilled()).toBe(false);
      // Asks for 300 MiB at most, and touches every byte of it.
      const hog = gated(`exec perl -e '$x = "a" x (300 * 1024 * 1024); print "survived\\n"'`);
      started.push(hog.child);
      await g.addPid(hog.child.pid ?? 0);
      hog.open();
      const exit = await hog.exit;
      expect(hog.stdout()).not.toContain('survived');
      expect(exit.signal).toBe('SIGKILL');
      expect(await g.wasOomKilled()).toBe(true);
      expect((await g.memoryEvents())?.oomKills).toBeGreaterThanOrEqual(1);
      await g.destroy();
    },
  );

  cgroupIt('pids', 'destroy without a freezer ends a forking tree round by round', async () => {
    const layout = detection.layout;
    if (layout?.version !== 'v1') return; // v2 ends groups with cgroup.kill (tested below)
    const noFreezer = {
      ...layout,
      freezer: false,
      hierarchies: layout.hierarchies.filter((h) => h.controller !== 'freezer'),
    };
    host = await openCgroupHost({ log, detection: { layout: noFreezer, notes: [] } });
    const g = await host.createSandboxCgroup(
      'local:u:no-freezer',
      resolveConfinementLimits({ pids: 20 }),
    );
    // Forks while it is being killed: a new child replaces each one that dies, up to the limit
    // (perl, unlike sh, goes on after a failed fork); 200 forks at most.
    const tree = gated(
      `exec perl -e '$| = 1; for my $n (1 .. 200) { my $p = fork(); if (defined $p && $p == 0) { sleep 60; exit 0 } print "forked\\n" if $n == 5; select(undef, undef, undef, 0.01) unless defined $p } sleep 60'`,
    );
    started.push(tree.child);
    await g.addPid(tree.child.pid ?? 0);
    tree.open();
    await tree.printed('forked', 1);
    await g.destroy();
    expect(await tree.exit).toMatchObject({ signal: 'SIGKILL' });
    for (const dir of g.dirs) expect(existsSync(dir)).toBe(false);
  });

  cgroupIt('pids', 'a busy loop is throttled to its CPU quota', async () => {
    const g = await group('local:u:busy', { cpuMillicores: 100 });
    expect(g.limitsInForce.cpuMillicores).toBe(100);
    const statFile = g.dirs.map((d) => `${d}/cpu.stat`).find((f) => existsSync(f));
    if (!statFile) throw new Error('no cpu.stat in the group: the cpu controller is not in force');
    const busy = gated('while :; do :; done');
    started.push(busy.child);
    await g.addPid(busy.child.pid ?? 0);
    busy.open();
    // 0.1 core against a loop that wants a whole one: the kernel throttles it within a period or
    // two (100 ms each); the bound only keeps a broken limit from looping forever.
    let throttled = 0;
    for (let round = 0; round < 3000 && throttled === 0; round++) {
      throttled = Number(/^nr_throttled (\d+)$/m.exec(await readFile(statFile, 'utf8'))?.[1] ?? 0);
      if (throttled === 0) await new Promise((r) => setTimeout(r, 10));
    }
    expect(throttled).toBeGreaterThan(0);
    await g.destroy();
  });

  cgroupIt('pids', "a gone gateway's groups are swept and their processes ended", async () => {
    const self = await currentGatewayIdentity();
    // A gateway of this pid namespace whose process is gone: a pid that started at tick 1.
    const ghost = { ...self, pid: self.pid, start: '1' };
    const ghostLog = recordingLogger();
    const ghostHost = await openCgroupHost({ log: ghostLog, identity: ghost });
    const g = await ghostHost.createSandboxCgroup('local:u:orphan', resolveConfinementLimits());
    const orphan = gated('exec sleep 60');
    started.push(orphan.child);
    await g.addPid(orphan.child.pid ?? 0);
    orphan.open();
    host = await openCgroupHost({ log });
    expect((await orphan.exit).signal).toBe('SIGKILL');
    for (const dir of g.dirs) expect(existsSync(dir)).toBe(false);
    expect(log.text('warn')).toContain('gateway that is gone');
  });

  cgroupIt(
    'pids',
    "a live gateway's groups are left alone by another gateway's sweep",
    async () => {
      const g = await group('local:u:live', { pids: 32 });
      const worker = gated('exec sleep 60');
      started.push(worker.child);
      await g.addPid(worker.child.pid ?? 0);
      worker.open();
      // A second host of the same (living) gateway sweeps: nothing of this one is gone.
      const second = await openCgroupHost({ log: recordingLogger() });
      expect(await g.members()).toEqual([worker.child.pid]);
      for (const dir of g.dirs) expect(existsSync(dir)).toBe(true);
      expect(second.layout).toBeDefined();
      await g.destroy();
    },
  );

  cgroupIt(
    'pids',
    'never moves pid 0, 1 or the gateway itself into a group, nor into a destroyed one',
    async () => {
      const g = await group('local:u:refuse', { pids: 32 });
      for (const pid of [0, 1, -1, process.pid, 1.5]) {
        await expect(g.addPid(pid)).rejects.toMatchObject({ code: 'CONFINEMENT_CGROUP' });
      }
      expect(await g.members()).toEqual([]);
      await g.destroy();
      const late = gated('exec sleep 60');
      started.push(late.child);
      await expect(g.addPid(late.child.pid ?? 0)).rejects.toThrow(/destroyed/);
    },
  );

  it('judges only gateways of its own pid namespace, by pid and start time', async () => {
    const self = await currentGatewayIdentity();
    expect(await gatewayIsGone(self, self)).toBe(false);
    expect(await gatewayIsGone({ ...self, start: '1' }, self)).toBe(true);
    // Pid 1 of another namespace: never judged from here, whatever this namespace's pid 1 is.
    expect(
      await gatewayIsGone({ ...self, pidNamespace: '1', pid: 999_999, start: '1' }, self),
    ).toBe(false);
  });

  it('falls back to rlimits only, saying why, when the groups cannot be set up', async () => {
    const failing = recordingLogger();
    const missing = `${tmpdir()}/no-such-cgroup-${process.pid}`;
    const h = await openCgroupHost({
      log: failing,
      detection: {
        layout: {
          version: 'v1',
          hierarchies: [{ controller: 'pids', dir: missing }],
          controllers: ['pids'],
          freezer: false,
        },
        notes: [],
      },
    });
    expect(h.layout).toBeUndefined();
    expect(failing.text('error')).toContain('cannot set up sandbox cgroups');
    await expect(
      h.createSandboxCgroup('local:u:t', resolveConfinementLimits()),
    ).rejects.toMatchObject({
      code: 'CONFINEMENT_CGROUP',
    });
  });

  it('refuses to create a group for a name that is no bounded string', async () => {
    const h = await openCgroupHost({ log, detection: { layout: undefined, notes: ['none'] } });
    await expect(h.createSandboxCgroup('', resolveConfinementLimits())).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(
      h.createSandboxCgroup('x'.repeat(2000), resolveConfinementLimits()),
    ).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(h.createSandboxCgroup('ok', resolveConfinementLimits())).rejects.toMatchObject({
      code: 'CONFINEMENT_CGROUP',
    });
  });
});

/** The unified hierarchy where it is writable (here beside v1, where it has no controllers). */
async function unifiedLayout(): Promise<CgroupV2Layout | undefined> {
  const mount = parseMountinfo(await readFile('/proc/self/mountinfo', 'utf8')).find(
    (m) => m.fsType === 'cgroup2' && !m.readOnly,
  );
  const own = parseProcCgroup(await readFile('/proc/self/cgroup', 'utf8')).find(
    (e) => e.controllers.length === 0,
  );
  if (!mount || !own || own.path !== '/' || mount.root !== '/') return undefined;
  if (!existsSync(`${mount.mountPoint}/cgroup.procs`)) return undefined;
  return {
    version: 'v2',
    dir: mount.mountPoint,
    placement: 'top',
    controllers: [],
    kill: true,
    gatewayMustMove: false,
  };
}

const unified = await unifiedLayout().catch(() => undefined);

describe('a v2 group ended by cgroup.kill', () => {
  (unified ? it : it.skip)(
    `kills a process tree in one write${unified ? '' : ' (skipped: no writable cgroup2 root here)'}`,
    async () => {
      const v2log = recordingLogger();
      const host = await openCgroupHost({ log: v2log, detection: { layout: unified, notes: [] } });
      const tree = gated(
        "setsid sh -c 'sleep 60 & echo forked; exec sleep 60' & echo forked; exec sleep 60",
      );
      try {
        const g = await host.createSandboxCgroup('local:u:v2', resolveConfinementLimits());
        expect(g.version).toBe('v2');
        await g.addPid(tree.child.pid ?? 0);
        tree.open();
        await tree.printed('forked', 2);
        const members = await g.members();
        expect(members.length).toBeGreaterThanOrEqual(3);
        await g.destroy();
        expect((await tree.exit).signal).toBe('SIGKILL');
        expect(members.filter(alive)).toEqual([]);
        // Ended by cgroup.kill itself, not by the kill rounds behind it.
        expect(v2log.text('error')).toBe('');
      } finally {
        if (tree.child.exitCode === null) tree.child.kill('SIGKILL');
        await host.close();
      }
    },
    60_000,
  );
});
