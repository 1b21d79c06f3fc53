import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '@sbx/core';
import { requireService } from '@sbx/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalSandboxProvider } from '../local-sandbox-provider.js';
import { detectCgroups } from './cgroup-detect.js';
import type { LocalSandbox } from '../local-sandbox.js';
import {
  confinementForTests,
  hidden,
  namespaceEmptiedWithin,
  pidNamespaceOf,
  processesInNamespace,
} from './confinement-test-support.js';

/**
 * What a hostile command tries, every probe sent base64-encoded (`hidden`), so no path guard or
 * translation sees its text: confined (isolation `bwrap`) it must fail; where it is harmless the
 * same probe also runs unconfined (isolation `none` with host bash) and must succeed there, which
 * shows the probe itself works. Destructive probes (writes outside the thread, mount, filling
 * `/tmp`) never run unconfined.
 */
const confinable = confinementForTests();
const redisUrl = confinable ? await requireService('redis') : undefined;
const GONE_DEADLINE_MS = 30_000;
const TMP_BYTES = 8 * 1024 * 1024;
const gatewayIsRoot = process.getuid?.() === 0;
const LIMITED_PIDS = 48;
const memoryCgroup =
  confinable &&
  ((await detectCgroups()).layout?.controllers.includes('memory') ??
    (console.warn('[sbx] skipping the memory-hog test: no memory cgroup is usable here'), false));

describe.runIf(confinable)('confined commands cannot escape their thread', () => {
  let base: string;
  let confined: LocalSandboxProvider;
  let host: LocalSandboxProvider;
  let alice: LocalSandbox;
  let aliceId: string;
  let unconfined: LocalSandbox;
  let secret: string;
  let bobCanary: string;
  let baseCanary: string;
  let listener: net.Server;
  let port: number;
  const received: string[] = [];

  /** A provider with small limits, for the fork bomb and the memory hog. */
  const limitedProvider = async () =>
    new LocalSandboxProvider({
      baseDir: base,
      isolation: 'bwrap',
      limits: { pids: LIMITED_PIDS, memoryBytes: 64 * 1024 * 1024 },
      logger: silentLogger,
    });

  /**
   * Runs a probe and checks that it ran at all (its last line): a probe that fails to start
   * would make every "did not escape" assertion hold for nothing.
   */
  const run = async (sandbox: LocalSandbox, script: string) => {
    const r = await sandbox.exec(hidden(`${script}\necho PROBE_RAN`), { timeoutMs: 60_000 });
    expect(r.stdout).toContain('PROBE_RAN');
    return { ...r, out: `${r.stdout}${r.stderr}` };
  };

  beforeAll(async () => {
    base = await mkdtemp(path.join(os.tmpdir(), 'sbx-escape-'));
    secret = `SECRET${randomBytes(12).toString('hex')}`;
    confined = new LocalSandboxProvider({
      baseDir: base,
      isolation: 'bwrap',
      tmpBytes: TMP_BYTES,
      logger: silentLogger,
    });
    host = new LocalSandboxProvider({
      baseDir: base,
      isolation: 'none',
      allowHostBash: true,
      logger: silentLogger,
    });
    aliceId = await confined.acquire({ userId: 'alice', threadId: 't' });
    alice = confined.get(aliceId)!;
    unconfined = host.get(await host.acquire({ userId: 'alice', threadId: 'unconfined' }))!;
    // Another tenant's file, and one in the base directory itself.
    const bob = confined.threadLayout('bob', 't');
    await mkdir(bob.workspacePath, { recursive: true });
    bobCanary = path.join(bob.workspacePath, 'canary.txt');
    await writeFile(bobCanary, `${secret}\n`);
    baseCanary = path.join(base, 'canary.txt');
    await writeFile(baseCanary, `${secret}\n`);
    listener = net.createServer((socket) => {
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => received.push(d));
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    port = (listener.address() as net.AddressInfo).port;
  });

  afterAll(async () => {
    await confined?.shutdown();
    await host?.shutdown();
    listener?.close();
    if (base) await rm(base, { recursive: true, force: true });
  });

  describe('reads', () => {
    it("another tenant's file by its host path: absent confined, read unconfined", async () => {
      const probe = `cat ${bobCanary}`;
      expect((await run(alice, probe)).out).not.toContain(secret);
      expect((await run(unconfined, probe)).out).toContain(secret);
    });

    it("another tenant's file by search (grep -r, rg): not found confined, found unconfined", async () => {
      const confinedSearch =
        'grep -rls SECRET /mnt /tmp /etc /home /root /srv /var /opt 2>/dev/null; ' +
        'command -v rg >/dev/null && rg -l --no-messages SECRET /mnt /tmp /etc 2>/dev/null; true';
      const r = await run(alice, confinedSearch.replaceAll('SECRET', secret));
      expect(r.out).not.toContain('canary.txt');
      expect((await run(unconfined, `grep -rl ${secret} ${base}`)).out).toContain('canary.txt');
    });

    it("the gateway's base directory, cwd and home: absent confined, readable unconfined", async () => {
      const probe = `cat ${baseCanary}; ls ${process.cwd()}; ls -a ${os.homedir()}`;
      const inside = await run(alice, probe);
      expect(inside.out).not.toContain(secret);
      expect(inside.out).not.toContain('package.json');
      const outside = await run(unconfined, probe);
      expect(outside.out).toContain(secret);
      expect(outside.out).toContain('package.json');
    });

    it("the gateway's environment (/proc/<pid>/environ) and process: invisible confined", async () => {
      const probe =
        `test -r /proc/${process.pid}/environ && head -c 1 /proc/${process.pid}/environ >/dev/null && echo ENVIRON_READ; ` +
        `kill -0 ${process.pid} 2>/dev/null && echo GATEWAY_SIGNALLED; ` +
        `cat /proc/${process.pid}/status >/dev/null 2>&1 && echo GATEWAY_SEEN; true`;
      const inside = await run(alice, probe);
      expect(inside.out).not.toMatch(/ENVIRON_READ|GATEWAY_SIGNALLED|GATEWAY_SEEN/);
      const outside = await run(unconfined, probe);
      expect(outside.out).toContain('GATEWAY_SIGNALLED');
      expect(outside.out).toContain('GATEWAY_SEEN');
    });

    it('/etc/shadow is not readable', async () => {
      const r = await run(alice, 'cat /etc/shadow && echo SHADOW_READ; true');
      expect(r.out).not.toContain('SHADOW_READ');
    });

    it.runIf(gatewayIsRoot)(
      'a root gateway confines as an unprivileged user: a root-owned 0600 file in the workspace stays unreadable',
      async () => {
        const layout = confined.threadLayout('alice', 't');
        const file = path.join(layout.workspacePath, 'root-only.txt');
        await writeFile(file, `${secret}\n`);
        await chown(file, 0, 0);
        await chmod(file, 0o600);
        const r = await run(alice, 'id -u; cat root-only.txt; true');
        expect(r.out).not.toContain(secret);
        expect(r.out.split('\n')[0]).not.toBe('0');
      },
    );
  });

  describe('writes outside the thread (confined only)', () => {
    it('the host /tmp, /usr, / and the base directory are out of reach', async () => {
      const name = `sbx-escape-${randomBytes(6).toString('hex')}`;
      const targets = [`/usr/${name}`, `/${name}`, `/etc/${name}`, path.join(base, name)];
      const r = await run(
        alice,
        `${targets.map((t) => `touch ${t} 2>/dev/null`).join('; ')}; echo x > /tmp/${name}; cat /tmp/${name}`,
      );
      expect(r.stdout).toContain('x');
      for (const target of [...targets, path.join('/tmp', name)]) {
        await expect(stat(target)).rejects.toMatchObject({ code: 'ENOENT' });
      }
    });
  });

  describe('links in the workspace', () => {
    it('a link to a host path leads nowhere from bash', async () => {
      const r = await run(alice, `ln -sf ${bobCanary} host-link; cat host-link; true`);
      expect(r.out).not.toContain(secret);
    });

    it('the file tools refuse the link bash made to a host path', async () => {
      await run(alice, `ln -sf ${bobCanary} tool-link`);
      await expect(alice.readFile('/mnt/user-data/workspace/tool-link')).rejects.toMatchObject({
        code: expect.stringMatching(/PERMISSION|FILE/),
      });
    });
  });

  describe('network', () => {
    it("a listener on the gateway's 127.0.0.1: unreachable confined, reached unconfined", async () => {
      const probe = `/bin/bash -c 'echo HELLO_${secret} > /dev/tcp/127.0.0.1/${port}' && echo SENT`;
      expect((await run(alice, probe)).out).not.toContain('SENT');
      expect(received.join('')).not.toContain(secret);
      expect((await run(unconfined, probe)).out).toContain('SENT');
      await expect.poll(() => received.join(''), { timeout: 10_000 }).toContain(secret);
    });

    it.runIf(redisUrl !== undefined)(
      'the test Redis: unreachable confined, answers unconfined',
      async () => {
        const url = new URL(redisUrl!);
        const target = `/dev/tcp/${url.hostname}/${url.port || 6379}`;
        const probe = `/bin/bash -c 'exec 3<>${target} && printf "PING\\r\\n" >&3 && head -c 5 <&3'`;
        expect((await run(alice, probe)).out).not.toMatch(/PONG|NOAUTH|-ERR/);
        // An authenticated Redis answers NOAUTH: reached all the same.
        expect((await run(unconfined, probe)).out).toMatch(/PONG|NOAUTH|-ERR/);
      },
    );

    it('only loopback exists: no route out', async () => {
      const r = await run(
        alice,
        'cat /proc/net/route | wc -l; ls /sys/class/net 2>/dev/null; cat /proc/net/dev',
      );
      expect(r.out).not.toMatch(/eth|ens|enp|wlan|docker/);
    });
  });

  describe('privileges', () => {
    it('mount and unshare are refused', async () => {
      const r = await run(
        alice,
        'unshare -U true && echo UNSHARED; unshare -r true && echo UNSHARED_ROOT; mount -t tmpfs none /mnt 2>/dev/null && echo MOUNTED; true',
      );
      expect(r.out).not.toMatch(/UNSHARED|MOUNTED/);
    });

    it('the command holds no capabilities and cannot gain any', async () => {
      const r = await run(alice, "grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status");
      expect(r.stdout).toContain('CapEff:\t0000000000000000');
      expect(r.stdout).toContain('CapBnd:\t0000000000000000');
      expect(r.stdout).toContain('NoNewPrivs:\t1');
    });

    it('filling /tmp stops at its size; the gateway carries on', async () => {
      const r = await run(
        alice,
        `dd if=/dev/zero of=/tmp/fill bs=1M count=${TMP_BYTES / 1024 / 1024 + 8} 2>&1; ls -l /tmp/fill`,
      );
      expect(r.out).toMatch(/No space left on device/);
      const size = Number(/\s(\d+)\s+\w+\s+\d+\s/.exec(r.stdout.split('\n').pop() ?? '')?.[1] ?? 0);
      expect(size).toBeLessThanOrEqual(TMP_BYTES);
      expect((await run(alice, 'rm -f /tmp/fill; echo alive')).stdout).toContain('alive');
    });

    it('a fork bomb stops at the pids limit; another tenant still runs commands', async () => {
      const limited = await limitedProvider();
      try {
        const bomberId = await limited.acquire({ userId: 'mallory', threadId: 'bomb' });
        const bomber = limited.get(bomberId)!;
        const other = limited.get(await limited.acquire({ userId: 'carol', threadId: 'calm' }))!;
        const bomb = bomber.exec(hidden('bomb() { bomb | bomb & }; bomb; sleep 3; echo survived'), {
          timeoutMs: 60_000,
        });
        const calm = await other.exec('echo calm-tenant-ok', { timeoutMs: 60_000 });
        expect(calm.stdout).toContain('calm-tenant-ok');
        const result = await bomb;
        expect(`${result.stdout}${result.stderr}`).toMatch(/Resource temporarily unavailable|fork/);
        const ns = (await pidNamespaceOf(limited.confinedInitPid(bomberId)!))!;
        expect((await processesInNamespace(ns)).length).toBeLessThanOrEqual(LIMITED_PIDS + 2);
        await limited.release(bomberId);
        expect(await namespaceEmptiedWithin(ns, GONE_DEADLINE_MS)).toEqual([]);
      } finally {
        await limited.shutdown();
      }
    });

    it.runIf(memoryCgroup)(
      'a memory hog is killed at the memory limit and reported as out of memory; the gateway carries on',
      async () => {
        const limited = await limitedProvider();
        try {
          const hog = limited.get(await limited.acquire({ userId: 'mallory', threadId: 'hog' }))!;
          const rss = process.memoryUsage().rss;
          const r = await hog.exec(hidden('head -c 400000000 /dev/zero | tail > /dev/null'), {
            timeoutMs: 60_000,
          });
          expect(r.stderr).toContain('ran out of memory');
          expect(process.memoryUsage().rss - rss).toBeLessThan(64 * 1024 * 1024);
          expect((await hog.exec('echo after-the-hog')).stdout).toContain('after-the-hog');
        } finally {
          await limited.shutdown();
        }
      },
    );
  });

  describe('processes', () => {
    const leavers = {
      background: 'sleep 600 >/dev/null 2>&1 &',
      'env -i': 'env -i sleep 600 >/dev/null 2>&1 &',
      setsid: 'setsid sleep 600 >/dev/null 2>&1 &',
      'setsid env -i': 'setsid env -i sleep 600 >/dev/null 2>&1 &',
      'double fork': '( (sleep 600 >/dev/null 2>&1 &) & )',
      nohup: 'nohup sleep 600 >/dev/null 2>&1 &',
    };

    it('a later command sees earlier background jobs (one namespace per thread)', async () => {
      await alice.exec('sleep 600 >/dev/null 2>&1 &');
      const r = await alice.exec('ps -eo comm');
      expect(r.stdout).toContain('sleep');
    });

    it('release() ends everything the thread started, whatever it did to its session or environment', async () => {
      const id = await confined.acquire({ userId: 'alice', threadId: 'release' });
      const sandbox = confined.get(id)!;
      for (const command of Object.values(leavers)) await sandbox.exec(command);
      await sandbox.processes.start('setsid env -i sleep 600');
      const ns = (await pidNamespaceOf(confined.confinedInitPid(id)!))!;
      expect((await processesInNamespace(ns)).length).toBeGreaterThanOrEqual(
        Object.keys(leavers).length,
      );
      await confined.release(id);
      expect(await namespaceEmptiedWithin(ns, GONE_DEADLINE_MS)).toEqual([]);
    });

    it('a thread evicted from the cache ends with its namespace (live namespaces are bounded)', async () => {
      const small = new LocalSandboxProvider({
        baseDir: base,
        isolation: 'bwrap',
        maxCachedThreads: 1,
        logger: silentLogger,
      });
      try {
        const firstId = await small.acquire({ userId: 'alice', threadId: 'evicted' });
        await small.get(firstId)!.exec('setsid env -i sleep 600 >/dev/null 2>&1 &');
        const ns = (await pidNamespaceOf(small.confinedInitPid(firstId)!))!;
        await small.acquire({ userId: 'alice', threadId: 'evicting' });
        expect(small.confinedInitPid(firstId)).toBeUndefined();
        expect(await namespaceEmptiedWithin(ns, GONE_DEADLINE_MS)).toEqual([]);
      } finally {
        await small.shutdown();
      }
    });

    it('unconfined, `setsid env -i` survives release (what the namespace closes)', async () => {
      const pidFile = path.join(base, `survivor-${randomBytes(4).toString('hex')}`);
      const id = await host.acquire({ userId: 'alice', threadId: 'survivor' });
      const sandbox = host.get(id)!;
      await sandbox.exec(
        `setsid env -i sh -c 'echo $$ > ${pidFile}; exec sleep 600' >/dev/null 2>&1 < /dev/null &`,
      );
      await expect
        .poll(() => readFile(pidFile, 'utf8').catch(() => ''), { timeout: 10_000 })
        .toMatch(/\d+\n/);
      const pid = Number((await readFile(pidFile, 'utf8')).trim());
      await host.release(id);
      try {
        expect(() => process.kill(pid, 0)).not.toThrow();
      } finally {
        process.kill(pid, 'SIGKILL');
      }
    });

    it(
      'a SIGKILLed gateway leaves none of its confined processes running',
      { timeout: 120_000 },
      async () => {
        const gateway = startGateway(base, Object.values(leavers));
        try {
          const initPid = await readyPid(gateway);
          const ns = (await pidNamespaceOf(initPid))!;
          expect(ns).toBeDefined();
          expect((await processesInNamespace(ns)).length).toBeGreaterThanOrEqual(
            Object.keys(leavers).length,
          );
          const exited = new Promise((resolve) => gateway.once('exit', resolve));
          gateway.kill('SIGKILL');
          await exited;
          expect(await namespaceEmptiedWithin(ns, GONE_DEADLINE_MS)).toEqual([]);
        } finally {
          gateway.kill('SIGKILL');
        }
      },
    );
  });
});

/** A gateway in a process of its own, confined, whose commands leave processes running. */
const GATEWAY_SCRIPT = `
  import { LocalSandboxProvider } from '@sbx/local';
  const provider = new LocalSandboxProvider({ baseDir: process.env.SBX_TEST_BASE, isolation: 'bwrap' });
  const id = await provider.acquire({ userId: 'u', threadId: 'gateway-death' });
  const sandbox = provider.get(id);
  for (const command of JSON.parse(process.env.SBX_TEST_COMMANDS)) await sandbox.exec(command);
  await sandbox.processes.start('setsid env -i sleep 600');
  process.stdout.write('ready ' + provider.confinedInitPid(id) + '\\n');
  setInterval(() => {}, 60_000);
`;

function startGateway(base: string, commands: readonly string[]): ChildProcess {
  const tsx = createRequire(import.meta.url).resolve('tsx');
  return spawn(
    process.execPath,
    ['--conditions=@sbx/source', '--import', tsx, '--input-type=module', '-e', GATEWAY_SCRIPT],
    {
      env: { ...process.env, SBX_TEST_BASE: base, SBX_TEST_COMMANDS: JSON.stringify(commands) },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
}

function readyPid(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    let stderr = '';
    let stdout = '';
    const timer = setTimeout(() => reject(new Error('the gateway was not ready in time')), 90_000);
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      const pid = /ready (\d+)/.exec(stdout)?.[1];
      if (pid === undefined) return;
      clearTimeout(timer);
      resolve(Number(pid));
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the gateway ended before it was ready (${code ?? signal}): ${stderr}`));
    });
  });
}
