import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MemoryOwnershipStore, SandboxRuntimeError, parseSandboxConfig } from '@sbx/core';
import {
  describeProcessContract,
  describeProviderContract,
  describeSandboxContract,
} from '@sbx/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { E2BCommands, E2BRemoteSandbox } from './e2b-client.js';
import { E2BSandboxProvider } from './e2b-sandbox-provider.js';
import { E2BSandbox } from './e2b-sandbox.js';
import { SdkE2BClient } from './sdk-client.js';
import { E2BStandinServer } from './testing/e2b-standin-server.js';

/*
 * The real `e2b` SDK end to end against the local stand-in (control plane + envd on 127.0.0.1):
 * proves the wiring of `SdkE2BClient` and the adapter, with the SDK's own URL building, request
 * encoding, Connect streaming and error mapping.
 */
let server: E2BStandinServer;
let client: SdkE2BClient;

beforeAll(async () => {
  server = await new E2BStandinServer().start();
  client = new SdkE2BClient({ apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url });
});
afterAll(async () => {
  await server.stop();
});

describe('real e2b SDK against the stand-in', () => {
  it('creates with metadata, envs and a timeout in seconds', async () => {
    const sbx = await client.create({
      template: 'code-interpreter-v1',
      metadata: { deer_flow_provider: 'e2b_sandbox_provider', 'odd key/&': 'v=1&x' },
      timeoutMs: 90_000,
      envs: { STATIC_VAR: 'from-create' },
    });
    const vm = server.vms.get(sbx.sandboxId)!;
    expect(vm.templateId).toBe('code-interpreter-v1');
    expect(vm.metadata['odd key/&']).toBe('v=1&x');
    expect(vm.timeoutSeconds).toBe(90);
    const out = await sbx.commands.run('echo "$STATIC_VAR"');
    expect(out.stdout).toBe('from-create\n');
  });

  it('lists with a metadata filter across pages (x-next-token)', async () => {
    for (let i = 0; i < 3; i++) {
      await client.create({ template: 'base', metadata: { group: 'paged', n: String(i) } });
    }
    await client.create({ template: 'base', metadata: { group: 'other' } });
    const paginator = client.list({ query: { metadata: { group: 'paged' } }, limit: 2 });
    const seen: string[] = [];
    let pages = 0;
    while (paginator.hasNext) {
      const items = await paginator.nextItems();
      pages += 1;
      seen.push(...items.map((i) => i.metadata.n ?? '?'));
    }
    expect(pages).toBe(2);
    expect(seen.sort()).toEqual(['0', '1', '2']);
  });

  it('runs commands with per-call env; a non-zero exit rejects with CommandExitError', async () => {
    const sbx = await client.create({ template: 'base', metadata: {} });
    const ok = await sbx.commands.run('echo "$SECRET_X"', { envs: { SECRET_X: 'per-call' } });
    expect(ok).toMatchObject({ exitCode: 0, stdout: 'per-call\n' });
    const err = await sbx.commands.run('echo out; echo err >&2; exit 4').catch((e: unknown) => e);
    expect((err as Error).name).toBe('CommandExitError');
    expect(err).toMatchObject({ exitCode: 4, stdout: 'out\n', stderr: 'err\n' });
  });

  it('a command past its timeoutMs is a TimeoutError about timeoutMs', async () => {
    const sbx = await client.create({ template: 'base', metadata: {} });
    const err = await sbx.commands.run('sleep 5', { timeoutMs: 300 }).catch((e: unknown) => e);
    expect((err as Error).name).toBe('TimeoutError');
    expect((err as Error).message).toContain("'timeoutMs'");
  });

  it('writes and reads files (text, bytes, stream), makes directories, stats', async () => {
    const sbx = await client.create({ template: 'base', metadata: {} });
    await sbx.files.write('/home/user/a/b.txt', 'hello');
    expect(await sbx.files.read('/home/user/a/b.txt')).toBe('hello');
    await sbx.files.write('/home/user/bin.dat', new Uint8Array([0, 255, 1]).buffer);
    expect(Array.from(await sbx.files.read('/home/user/bin.dat', { format: 'bytes' }))).toEqual([
      0, 255, 1,
    ]);
    const stream = await sbx.files.read('/home/user/a/b.txt', { format: 'stream' });
    expect(await new Response(stream).text()).toBe('hello');
    expect(await sbx.files.makeDir('/home/user/newdir')).toBe(true);
    expect(await sbx.files.makeDir('/home/user/newdir')).toBe(false);
    expect((await sbx.files.getInfo('/home/user/a/b.txt')).type).toBe('file');
    const missing = await sbx.files.read('/home/user/nope').catch((e: unknown) => e);
    expect((missing as Error).name).toBe('FileNotFoundError');
  });

  it('connects, sets the timeout, kills; a killed VM is gone everywhere', async () => {
    const sbx = await client.create({ template: 'base', metadata: {} });
    const again = await client.connect(sbx.sandboxId, { timeoutMs: 600_000 });
    await again.setTimeout(120_000);
    expect(server.vms.get(sbx.sandboxId)!.timeoutSeconds).toBe(120);
    expect(await again.kill()).toBe(true);
    expect(await again.kill()).toBe(false);
    const connectErr = await client.connect(sbx.sandboxId).catch((e: unknown) => e);
    expect((connectErr as Error).name).toBe('SandboxNotFoundError');
    expect((connectErr as Error).message).toContain('Paused sandbox');
    const runErr = await sbx.commands.run('true').catch((e: unknown) => e);
    expect((runErr as Error).name).toBe('SandboxNotFoundError');
    expect((runErr as Error).message).toContain('probably not running anymore');
    const readErr = await sbx.files.read('/home/user/x').catch((e: unknown) => e);
    expect((readErr as Error).name).toBe('TimeoutError');
    expect((readErr as Error).message).toContain('The sandbox was not found');
    const timeoutErr = await sbx.setTimeout(1000).catch((e: unknown) => e);
    expect((timeoutErr as Error).name).toBe('SandboxNotFoundError');
  });

  it('the adapter marks a reaped VM dead through the real SDK error', async () => {
    const sbx = await client.create({ template: 'base', metadata: {} });
    const adapter = new E2BSandbox(sbx.sandboxId, sbx);
    expect(await adapter.executeCommand('echo alive')).toBe('alive\n');
    server.reap(sbx.sandboxId);
    expect(await adapter.executeCommand('echo x')).toMatch(
      /^Error: .*probably not running anymore/,
    );
    expect(adapter.isDead).toBe(true);
  });

  it('rejects a wrong API key with AuthenticationError', async () => {
    const bad = new SdkE2BClient({ apiKey: 'wrong', apiUrl: server.url, sandboxUrl: server.url });
    const err = await bad.create({ template: 'base', metadata: {} }).catch((e: unknown) => e);
    expect((err as Error).name).toBe('AuthenticationError');
  });
});

/** A sandbox over the real SDK on a stand-in of its own; `connect` opens a second client of it. */
async function standinSandbox() {
  const standin = await new E2BStandinServer().start();
  const sdk = new SdkE2BClient({
    apiKey: standin.apiKey,
    apiUrl: standin.url,
    sandboxUrl: standin.url,
  });
  const remote = await sdk.create({ template: 'base', metadata: {} });
  await remote.commands.run('mkdir -p /home/user/workspace');
  return {
    sandbox: new E2BSandbox(remote.sandboxId, remote),
    workdir: '/mnt/user-data/workspace',
    cleanup: () => standin.stop(),
    connect: async () => new E2BSandbox(remote.sandboxId, await sdk.connect(remote.sandboxId)),
  };
}

describe('exec with input over the real SDK', () => {
  /**
   * The SDK takes input only for a command started in the background, so exec starts it, then
   * sends the input: a command that does not read it (`true`) may exit first, and the send then
   * hears "process not found". This remote sends each input only once the command has ended: the
   * order the race produces at random, every time.
   */
  async function inputAfterExit() {
    const standin = await new E2BStandinServer().start();
    const sdk = new SdkE2BClient({
      apiKey: standin.apiKey,
      apiUrl: standin.url,
      sandboxUrl: standin.url,
    });
    const remote = await sdk.create({ template: 'base', metadata: {} });
    const vm = standin.vms.get(remote.sandboxId)!.vm;
    const real = remote.commands;
    const commands = new Proxy(real, {
      get(target, key) {
        if (key === 'sendStdin') {
          return async (pid: number, data: string | Uint8Array) => {
            await vm.processes.get(pid)?.ended;
            return target.sendStdin(pid, data);
          };
        }
        const value: unknown = Reflect.get(target, key);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as E2BCommands;
    const late: E2BRemoteSandbox = { ...remote, commands };
    return { sandbox: new E2BSandbox(remote.sandboxId, late), stop: () => standin.stop() };
  }

  it('a command that exits before its input is sent reports its exit: the input was not needed', async () => {
    const { sandbox, stop } = await inputAfterExit();
    try {
      const ok = await sandbox.exec('true', { stdin: 'x' });
      expect(ok).toMatchObject({ exitCode: 0, stdout: '', stderr: '' });
      const failed = await sandbox.exec('echo gone; exit 3', { stdin: 'x' });
      expect(failed).toMatchObject({ exitCode: 3, stdout: 'gone\n' });
    } finally {
      await stop();
    }
  });
});

describeSandboxContract('E2BSandbox over the real SDK and the stand-in', standinSandbox);

describeProcessContract('E2BSandbox over the real SDK and the stand-in', standinSandbox, {
  secondClient: (sut) => (sut as Awaited<ReturnType<typeof standinSandbox>>).connect(),
});

describeProviderContract(
  'E2BSandboxProvider over the real SDK and the stand-in',
  async () => {
    const standin = await new E2BStandinServer().start();
    const baseDir = await mkdtemp(path.join(os.tmpdir(), 'sbx-e2b-sdk-contract-'));
    const provider = new E2BSandboxProvider({
      config: parseSandboxConfig({
        use: '@sbx/e2b',
        base_dir: baseDir,
        replicas: 32,
        spec: { images: ['code-interpreter-v1'] },
        e2b: { api_key: standin.apiKey, api_url: standin.url, sandbox_url: standin.url },
      }),
      ownershipStore: new MemoryOwnershipStore(),
      capacityStore: null,
    });
    return {
      provider,
      cleanup: async () => {
        await standin.stop();
        await rm(baseDir, { recursive: true, force: true });
      },
    };
  },
  { specImage: 'code-interpreter-v1' },
);

describe('an unreachable E2B API', () => {
  it('is a SandboxRuntimeError naming the host and the cause, not a bare "fetch failed"', async () => {
    const { createServer } = await import('node:net');
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const offline = new SdkE2BClient({ apiKey: 'e2b_test', apiUrl: `http://127.0.0.1:${port}` });
    const failure = await offline.create({ template: 'base', metadata: {} }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(SandboxRuntimeError);
    expect((failure as Error).message).toContain(`E2B API at 127.0.0.1:${port} is unreachable`);
    expect((failure as Error).message).toContain('ECONNREFUSED');
    await expect(offline.list().nextItems()).rejects.toThrow(`127.0.0.1:${port}`);
  });
});

describe('a per-acquire spec on E2B', () => {
  it('writes labels as VM metadata under sbx’s own tags; a template names another VM; refuses the rest', async () => {
    const standin = await new E2BStandinServer().start();
    const baseDir = await mkdtemp(path.join(os.tmpdir(), 'sbx-e2b-spec-'));
    const provider = new E2BSandboxProvider({
      config: parseSandboxConfig({
        use: '@sbx/e2b',
        base_dir: baseDir,
        spec: { images: ['code-interpreter-v1'] },
        e2b: { api_key: standin.apiKey, api_url: standin.url, sandbox_url: standin.url },
      }),
      ownershipStore: new MemoryOwnershipStore(),
      capacityStore: null,
    });
    try {
      const id = await provider.acquire({
        userId: 'u1',
        threadId: 'labelled',
        // A label may not impersonate sbx's tags: the thread tag stays the thread's.
        spec: { labels: { 'sbx.dev/tenant': 'acme', deer_flow_thread: 'someone-else' } },
      });
      const vm = standin.vms.get(id)!;
      expect(vm.metadata['sbx.dev/tenant']).toBe('acme');
      const listed = (await provider.listSandboxes()).find((s) => s.id === id);
      expect(listed?.labels).toEqual({ 'sbx.dev/tenant': 'acme' });
      expect(vm.metadata.deer_flow_thread).toBe('labelled');
      await expect(
        provider.acquire({ userId: 'u1', threadId: 'x', spec: { resources: { cpus: 2 } } }),
      ).rejects.toMatchObject({ code: 'SANDBOX_SPEC' });
      await expect(
        provider.acquire({ userId: 'u1', threadId: 'x', spec: { image: 'base' } }),
      ).rejects.toThrow(/not in sandbox.spec.images/);
      // The timeout is the VM's idle timeout, and its tag keeps it for every instance.
      const timed = await provider.acquire({
        userId: 'u1',
        threadId: 'timed',
        spec: { timeoutSeconds: 90 },
      });
      expect(standin.vms.get(timed)!.timeoutSeconds).toBe(90);
      expect(standin.vms.get(timed)!.metadata.sbx_timeout_seconds).toBe('90');
      // The template is part of the thread's identity: its own VM, found again by its tag.
      const templated = await provider.acquire({
        userId: 'u1',
        threadId: 'labelled',
        spec: { image: 'code-interpreter-v1' },
      });
      expect(templated).not.toBe(id);
      expect(standin.vms.get(templated)!.templateId).toBe('code-interpreter-v1');
      expect(standin.vms.get(templated)!.metadata.sbx_spec).toMatch(/^[0-9a-f]{16}$/);
      expect(
        await provider.acquire({
          userId: 'u1',
          threadId: 'labelled',
          spec: { image: 'code-interpreter-v1' },
        }),
      ).toBe(templated);
      expect(await provider.acquire({ userId: 'u1', threadId: 'labelled' })).toBe(id);
    } finally {
      await provider.shutdown();
      await standin.stop();
      await rm(baseDir, { recursive: true, force: true });
    }
  });
});
