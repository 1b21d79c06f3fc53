import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { AioSandbox } from './aio-sandbox.js';
import { DEFAULT_SECURITY_PROFILE, type ContainerResources } from './container-profile.js';
import { removeByPrefix, runPrefix, standinBackend, standinDocker } from './docker-test-support.js';
import type { LocalContainerBackendOptions } from './local-container-backend.js';

// Resource limits and the hardened profile on real containers of the stand-in image.
const { docker, ready } = await standinDocker();
const prefix = runPrefix('limits');

const backendWith = (extra: Partial<LocalContainerBackendOptions> = {}) =>
  standinBackend(docker!, prefix, extra);

async function started(extra: Partial<LocalContainerBackendOptions> = {}) {
  const backend = backendWith(extra);
  const info = await backend.create({ sandboxId: `l${randomBytes(4).toString('hex')}` });
  const sandbox = new AioSandbox(info.sandboxId, { baseUrl: info.sandboxUrl });
  return {
    sandbox,
    info,
    cleanup: async () => {
      await sandbox.close();
      await backend.destroy(info);
    },
  };
}

const small: ContainerResources = { memoryMb: 128, cpus: 1, pids: 256 };

describe.skipIf(!ready)('container limits and the hardened profile (real Docker)', () => {
  afterAll(async () => {
    await removeByPrefix(docker!, prefix);
  });

  it('a command allocating 512 MB under a 128 MB limit is OOM-killed, and the result says so', async () => {
    const { sandbox, cleanup } = await started({ resources: small });
    try {
      const out = await sandbox.executeCommand(
        'node -e "const a = []; for (let i = 0; i < 512; i++) a.push(Buffer.alloc(1 << 20, 1)); console.log(\'survived\')"',
      );
      expect(out).not.toContain('survived');
      expect(out).toContain(
        'The command was killed because the sandbox ran out of memory (its limit is 128 MiB).',
      );
      expect(out).toMatch(/Exit Code: 137$/);
      // The sandbox itself is fine afterwards; a plain SIGKILL is not reported as memory.
      expect(await sandbox.executeCommand('echo still-here')).toBe('still-here\n');
      const killed = await sandbox.executeCommand("sh -c 'kill -9 $$'");
      expect(killed).not.toContain('ran out of memory');
    } finally {
      await cleanup();
    }
  });

  it('a fork bomb in one sandbox is held by its pids limit and does not delay another', async () => {
    const bombed = await started({ resources: { memoryMb: 512, cpus: 1, pids: 128 } });
    const other = await started();
    try {
      const bomb = bombed.sandbox
        .executeCommand('bomb() { bomb | bomb & }; bomb; sleep 5', { timeoutMs: 8_000 })
        .catch(() => 'bombed sandbox failed, as it may');
      // Let the bomb fill its pids budget, then time the other sandbox's commands.
      await bombed.sandbox.executeCommandInScope('sleep 1', { scopeId: 'waiter' }).catch(() => '');
      let slowest = 0;
      for (let i = 0; i < 5; i++) {
        const started = performance.now();
        expect(await other.sandbox.executeCommand('echo fine')).toBe('fine\n');
        slowest = Math.max(slowest, performance.now() - started);
      }
      expect(slowest).toBeLessThan(1_000);
      const inspected = await docker!.getContainer(bombed.info.containerName!).inspect();
      expect(inspected.HostConfig.PidsLimit).toBe(128);
      await bomb;
    } finally {
      await bombed.cleanup();
      await other.cleanup();
    }
  });

  it('a read-only root keeps /tmp writable (tmpfs) and refuses writes elsewhere', async () => {
    const { sandbox, info, cleanup } = await started({
      security: { ...DEFAULT_SECURITY_PROFILE, readOnlyRoot: true },
    });
    try {
      expect(await sandbox.executeCommand('echo ok > /tmp/t && cat /tmp/t')).toBe('ok\n');
      expect(await sandbox.executeCommand('touch /etc/sbx-test 2>&1; echo rc=$?')).toMatch(
        /Read-only file system[\s\S]*rc=1/,
      );
      const inspected = await docker!.getContainer(info.containerName!).inspect();
      expect(inspected.HostConfig.ReadonlyRootfs).toBe(true);
    } finally {
      await cleanup();
    }
  });

  it('capabilities are dropped: raw sockets (NET_RAW) are refused in the container', async () => {
    const { sandbox, cleanup } = await started();
    try {
      const status = await sandbox.executeCommand(
        'grep CapEff /proc/self/status; grep NoNewPrivs /proc/self/status',
      );
      const effective = BigInt(`0x${/CapEff:\s*([0-9a-f]+)/.exec(status)?.[1] ?? '0'}`);
      const NET_RAW = 13n;
      const SYS_ADMIN = 21n;
      expect(effective & (1n << NET_RAW)).toBe(0n);
      expect(effective & (1n << SYS_ADMIN)).toBe(0n);
      expect(status).toMatch(/NoNewPrivs:\s*1/);
    } finally {
      await cleanup();
    }
  });
});
