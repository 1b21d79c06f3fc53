import {
  ConnectionConfig,
  Sandbox,
  SandboxApiException,
  SandboxManager,
} from '@alibaba-group/opensandbox';
import type { ConnectionConfigOptions } from '@alibaba-group/opensandbox';
import { SandboxRuntimeError, silentLogger } from '@sbx/core';
import {
  describeProviderContract,
  describeProcessContract,
  describeSandboxContract,
  rejectionOf,
  sandboxFromProvider,
} from '@sbx/core/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { OpenSandboxProvider } from './opensandbox-provider.js';
import type { OpenSandboxProviderOptions } from './opensandbox-provider.js';
import { EXECD_PORT, INGRESS_HEADER, OpenSandboxStandin } from './testing/opensandbox-standin.js';

/*
 * Everything here goes through the real `@alibaba-group/opensandbox` SDK (0.1.11) over HTTP to the
 * stand-in server on 127.0.0.1: first the SDK alone (what it sends, how it reads the answers), then
 * the provider, which loads the SDK itself exactly as in production (no injection).
 */

const API_KEY = 'standin-key';

describe('the real SDK against the stand-in server', () => {
  let standin: OpenSandboxStandin;
  const opened: Sandbox[] = [];
  const conn = (extra: ConnectionConfigOptions = {}) =>
    new ConnectionConfig({
      domain: standin.domain,
      apiKey: API_KEY,
      disableMetrics: true,
      ...extra,
    });
  const create = async (
    extra: Partial<Parameters<typeof Sandbox.create>[0]> = {},
  ): Promise<Sandbox> => {
    const sandbox = await Sandbox.create({
      image: 'python:3.11',
      connectionConfig: conn(),
      readyTimeoutSeconds: 5,
      ...extra,
    });
    opened.push(sandbox);
    return sandbox;
  };

  beforeAll(async () => {
    standin = await OpenSandboxStandin.start({ apiKey: API_KEY });
  });
  afterAll(async () => {
    await Promise.all(opened.map((s) => s.close()));
    await standin.stop();
  });

  it('create sends image, env, metadata, lifetime, the default entrypoint and the API key', async () => {
    const sandbox = await create({ env: { A: '1' }, metadata: { m: 'v' }, timeoutSeconds: 120 });
    expect(standin.createRequests.at(-1)).toMatchObject({
      image: { uri: 'python:3.11' },
      env: { A: '1' },
      metadata: { m: 'v' },
      timeout: 120,
      entrypoint: ['tail', '-f', '/dev/null'],
    });
    const paths = standin.requests.map((r) => `${r.listener} ${r.method} ${r.path}`);
    expect(paths).toContain('lifecycle POST /v1/sandboxes');
    expect(paths).toContain(`lifecycle GET /v1/sandboxes/${sandbox.id}/endpoints/${EXECD_PORT}`);
    expect(paths).toContain('execd-direct GET /ping');
    const createCall = standin.requests.find(
      (r) => r.path === '/v1/sandboxes' && r.method === 'POST',
    );
    expect(createCall?.apiKey).toBe(API_KEY);
    // The endpoint's headers travel with every execd call.
    const ping = standin.requests.find((r) => r.listener === 'execd-direct' && r.path === '/ping');
    expect(ping?.ingress).toBe(`${sandbox.id}-${EXECD_PORT}`);
    expect(INGRESS_HEADER).toBe('opensandbox-ingress-to');
  });

  it('timeoutSeconds: null creates without a lifetime (explicit cleanup)', async () => {
    const sandbox = await create({ timeoutSeconds: null });
    expect(standin.createRequests.at(-1)).not.toHaveProperty('timeout');
    expect((await sandbox.getInfo()).expiresAt).toBeNull();
  });

  it('a create without the API key is refused with a 401 SandboxApiException', async () => {
    const err = await rejectionOf(
      Sandbox.create({
        image: 'python:3.11',
        connectionConfig: new ConnectionConfig({ domain: standin.domain, disableMetrics: true }),
      }),
    );
    expect(err).toBeInstanceOf(SandboxApiException);
    expect((err as SandboxApiException).statusCode).toBe(401);
  });

  it('commands stream one event per line, forward envs and the limit in milliseconds, and report exit codes', async () => {
    const sandbox = await create({ env: { A: '1' } });
    const execution = await sandbox.commands.run(
      'echo "$A-$B"; echo; printf tail; echo err >&2; exit 7',
      { envs: { B: '2' }, timeoutSeconds: 12 },
    );
    expect(execution.logs.stdout.map((m) => m.text)).toEqual(['1-2', '\n', 'tail']);
    expect(execution.logs.stderr.map((m) => m.text)).toEqual(['err']);
    expect(execution.exitCode).toBe(7);
    expect(execution.error?.name).toBe('CommandExecError');
    expect(standin.commandRequests.at(-1)?.body).toMatchObject({
      envs: { B: '2' },
      timeout: 12_000,
    });
    const ok = await sandbox.commands.run('true');
    expect(ok.exitCode).toBe(0);
    expect(ok.complete).toBeDefined();
  });

  it('a command killed at its limit reports exit code -1 (signal: killed)', async () => {
    const sandbox = await create();
    const execution = await sandbox.commands.run('sleep 5', { timeoutSeconds: 0.3 });
    expect(execution.exitCode).toBe(-1);
    expect(execution.error?.traceback).toEqual(['signal: killed']);
  });

  it('uploads create parent directories and apply the mode; downloads are byte-exact; a missing file is a 404', async () => {
    const sandbox = await create();
    const bytes = new Uint8Array([0, 1, 2, 0xfe, 0xff, 10, 13]);
    await sandbox.files.writeFiles([
      { path: '/mnt/user-data/a/b/blob.bin', data: bytes, mode: 600 },
    ]);
    expect(Array.from(await sandbox.files.readBytes('/mnt/user-data/a/b/blob.bin'))).toEqual(
      Array.from(bytes),
    );
    const mode = await sandbox.commands.run('stat -c %a /mnt/user-data/a/b/blob.bin');
    expect(mode.logs.stdout.map((m) => m.text)).toEqual(['600']);
    const missing = await rejectionOf(sandbox.files.readBytes('/mnt/user-data/none.txt'));
    expect(missing).toBeInstanceOf(SandboxApiException);
    expect((missing as SandboxApiException).statusCode).toBe(404);
  });

  it('renew sends an absolute expiry of now + the given seconds', async () => {
    const sandbox = await create();
    const before = Date.now();
    await sandbox.renew(3600);
    const renewal = standin.renewRequests.at(-1);
    expect(renewal?.sandboxId).toBe(sandbox.id);
    const expiresAt = Date.parse(renewal!.expiresAt);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 3_600_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 3_600_000);
  });

  it('connect reaches a running sandbox; kill deletes it; a deleted or unknown id is a 404', async () => {
    const sandbox = await create();
    const again = await Sandbox.connect({ sandboxId: sandbox.id, connectionConfig: conn() });
    opened.push(again);
    expect((await again.commands.run('echo connected')).logs.stdout[0]?.text).toBe('connected');
    await sandbox.kill();
    expect(standin.sandboxes.has(sandbox.id)).toBe(false);
    const gone = await rejectionOf(sandbox.getInfo());
    expect((gone as SandboxApiException).statusCode).toBe(404);
    const unknown = await rejectionOf(
      Sandbox.connect({ sandboxId: 'no-such-sandbox', connectionConfig: conn() }),
    );
    expect(unknown).toBeInstanceOf(SandboxApiException);
    expect((unknown as SandboxApiException).statusCode).toBe(404);
  });

  it('SandboxManager lists sandboxes filtered by metadata', async () => {
    const a = await create({ metadata: { team: 'list-a' } });
    await create({ metadata: { team: 'list-b' } });
    const manager = SandboxManager.create({ connectionConfig: conn() });
    try {
      const listed = await manager.listSandboxInfos({ metadata: { team: 'list-a' } });
      expect(listed.items.map((i) => i.id)).toEqual([a.id]);
      expect(listed.pagination?.totalItems).toBe(1);
    } finally {
      await manager.close();
    }
  });

  it('useServerProxy routes execd calls through the lifecycle server', async () => {
    const sandbox = await create({ connectionConfig: conn({ useServerProxy: true }) });
    const before = standin.requests.filter((r) => r.listener === 'execd-direct').length;
    await sandbox.commands.run('echo proxied');
    expect(standin.requests.filter((r) => r.listener === 'execd-direct')).toHaveLength(before);
    expect(standin.requests.map((r) => r.path)).toContain(
      `/v1/sandboxes/${sandbox.id}/proxy/${EXECD_PORT}/command`,
    );
  });

  it('create reports its latency to /v1/metrics/events unless metrics are disabled', async () => {
    const event = standin.nextMetricsEvent();
    const sandbox = await create({ connectionConfig: conn({ disableMetrics: false }) });
    expect(await event).toMatchObject({
      eventType: 'sandbox.create',
      sandboxId: sandbox.id,
      success: true,
    });
  });
});

describe('OpenSandboxProvider through the real SDK and the stand-in server', () => {
  let standin: OpenSandboxStandin;
  let provider: OpenSandboxProvider | undefined;
  const make = (
    opensandbox: Record<string, unknown> = {},
    extra: Partial<OpenSandboxProviderOptions['config']> = {},
  ) => {
    provider = new OpenSandboxProvider({
      config: {
        image: 'sbx-test:1',
        ...extra,
        opensandbox: {
          domain: standin.domain,
          api_key: API_KEY,
          disable_metrics: true,
          ...opensandbox,
        },
      },
      logger: silentLogger,
    });
    return provider;
  };

  beforeAll(async () => {
    standin = await OpenSandboxStandin.start({ apiKey: API_KEY });
  });
  afterEach(async () => {
    await provider?.shutdown();
    provider = undefined;
  });
  afterAll(async () => {
    await standin.stop();
  });

  it('§8.8.164 create forwards image, lifetime, environment and metadata, then prepares the user-data directories', async () => {
    const p = make({ sandbox_timeout: 3600 }, { environment: { GREETING: 'hi' } });
    const id = await p.acquire({ userId: 'u-sdk', threadId: 't-sdk' });
    const sandbox = p.get(id)!;
    expect(standin.createRequests.at(-1)).toMatchObject({
      image: { uri: 'sbx-test:1' },
      timeout: 3600,
      env: { GREETING: 'hi' },
      metadata: {
        deer_flow_provider: 'opensandbox',
        deer_flow_thread: 't-sdk',
        deer_flow_user: 'u-sdk',
      },
    });
    const machine = standin.sandbox(sandbox.remoteId).machine;
    for (const dir of [
      '/mnt/user-data/workspace',
      '/mnt/user-data/uploads',
      '/mnt/user-data/outputs',
    ]) {
      expect(await machine.exists(dir)).toBe(true);
    }
    expect(
      await sandbox.executeCommand('echo "$GREETING $EXTRA"', { env: { EXTRA: 'there' } }),
    ).toBe('hi there\n');
  });

  it('§8.8.168 handing out an active sandbox again renews it for the lifetime', async () => {
    const p = make({ sandbox_timeout: 3600 });
    const id = await p.acquire({ userId: 'u', threadId: 'renew' });
    const remoteId = p.get(id)!.remoteId;
    const before = Date.now();
    expect(await p.acquire({ userId: 'u', threadId: 'renew' })).toBe(id);
    const renewal = standin.renewRequests.filter((r) => r.sandboxId === remoteId).at(-1);
    expect(Date.parse(renewal!.expiresAt)).toBeGreaterThanOrEqual(before + 3_600_000 - 1000);
  });

  it('§8.8.170 a released sandbox is reclaimed by the same thread after a `true` health check', async () => {
    const p = make();
    const id = await p.acquire({ userId: 'u', threadId: 'reclaim' });
    const remoteId = p.get(id)!.remoteId;
    await p.release(id);
    expect(p.warmIds).toEqual([id]);
    expect(await p.acquire({ userId: 'u', threadId: 'reclaim' })).toBe(id);
    expect(p.get(id)!.remoteId).toBe(remoteId);
    const last = standin.commandRequests.filter((c) => c.sandboxId === remoteId).at(-1);
    expect(last?.body).toMatchObject({ command: 'true', timeout: 10_000 });
  });

  it('§8.8.178 a command-path 404 (remote deleted behind the provider) evicts the sandbox; the next acquire rebuilds', async () => {
    // Explicit cleanup: no renewal runs first, so the command call itself meets the 404 (proxied).
    const p = make({ sandbox_timeout: 0, use_server_proxy: true });
    const id = await p.acquire({ userId: 'u', threadId: 'gone' });
    const first = p.get(id)!;
    const manager = SandboxManager.create({
      connectionConfig: new ConnectionConfig({ domain: standin.domain, apiKey: API_KEY }),
    });
    await manager.killSandbox(first.remoteId);
    await manager.close();
    const err = await rejectionOf(first.executeCommand('echo hi'));
    expect(err).toBeInstanceOf(SandboxRuntimeError);
    expect(String((err as Error).message)).toContain('is gone');
    expect(p.get(id)).toBeUndefined();
    expect(await p.acquire({ userId: 'u', threadId: 'gone' })).toBe(id);
    expect(p.get(id)!.remoteId).not.toBe(first.remoteId);
  });

  it('a command that outlives its limit is killed by execd and reported with the timeout notice', async () => {
    const p = make();
    const id = await p.acquire({ userId: 'u', threadId: 'timeout' });
    const out = await p
      .get(id)!
      .executeCommand('echo started; sleep 5; echo never', { timeoutMs: 500 });
    expect(out).toMatch(/^started\n\nCommand timed out after 0\.5 seconds and was terminated\./);
    expect(out).not.toContain('never');
    expect(out).not.toContain('Exit Code');
  });

  it('§8.8.171 shutdown deletes every remote it created, warm and active', async () => {
    const p = make();
    const a = await p.acquire({ userId: 'u', threadId: 'down-a' });
    const b = await p.acquire({ userId: 'u', threadId: 'down-b' });
    const remotes = [p.get(a)!.remoteId, p.get(b)!.remoteId];
    await p.release(a);
    expect(remotes.every((r) => standin.sandboxes.has(r))).toBe(true);
    await p.shutdown();
    expect(remotes.filter((r) => standin.sandboxes.has(r))).toEqual([]);
  });
});

describeProviderContract('OpenSandboxProvider (real SDK, stand-in server)', async () => {
  const standin = await OpenSandboxStandin.start({ apiKey: API_KEY });
  const provider = new OpenSandboxProvider({
    config: { opensandbox: { domain: standin.domain, api_key: API_KEY, disable_metrics: true } },
    logger: silentLogger,
  });
  return { provider, cleanup: () => standin.stop() };
});

for (const useServerProxy of [false, true]) {
  const mode = useServerProxy ? 'server proxy' : 'direct endpoint';
  describeSandboxContract(`OpenSandboxSandbox (real SDK, stand-in server, ${mode})`, async () => {
    const standin = await OpenSandboxStandin.start({ apiKey: API_KEY });
    const provider = new OpenSandboxProvider({
      config: {
        opensandbox: {
          domain: standin.domain,
          api_key: API_KEY,
          use_server_proxy: useServerProxy,
          disable_metrics: true,
        },
      },
      logger: silentLogger,
    });
    return sandboxFromProvider(provider, {
      threadId: `sdk-${mode}`,
      cleanup: () => standin.stop(),
    });
  });
}

let processCase = 0;
describeProcessContract('OpenSandboxSandbox (real SDK, stand-in server)', async () => {
  const standin = await OpenSandboxStandin.start({ apiKey: API_KEY });
  const provider = new OpenSandboxProvider({
    config: { opensandbox: { domain: standin.domain, api_key: API_KEY, disable_metrics: true } },
    logger: silentLogger,
  });
  return sandboxFromProvider(provider, {
    threadId: `sdk-process-${++processCase}`,
    cleanup: () => standin.stop(),
  });
});
