import { createServer, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { isSbxError, parseNetworkPolicy, silentLogger, type EgressGateway } from '@sbx/core';
import { EgressCertificateAuthority, EgressProxy, EgressProxyGateway } from '@sbx/egress';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LocalSandboxProvider } from '../local-sandbox-provider.js';
import type { LocalSandbox } from '../local-sandbox.js';
import { confinementForTests, hidden } from './confinement-test-support.js';

/**
 * A confined sandbox with an egress gateway reaches the network only through the proxy, under its
 * policy. Every probe is sent base64-encoded (`hidden`), so nothing on the way sees its text; the
 * upstream is an HTTP server on the host's loopback (outside the namespace), which the proxy may
 * reach (`allowPrivate`) under the test names its resolver maps there.
 */
const confinable = confinementForTests();
const LOOPBACK = '127.0.0.1';

describe.runIf(confinable)('a confined sandbox gets out through its egress gateway only', () => {
  let base: string;
  let socketRoot: string;
  let upstream: Server;
  let port: number;
  let proxy: EgressProxy;
  let provider: LocalSandboxProvider;
  let gatewayNone: LocalSandboxProvider;
  let sandbox: LocalSandbox;
  let real: EgressProxyGateway;
  const token = `UPSTREAM${randomBytes(8).toString('hex')}`;
  const attachments = { opened: 0, closed: 0 };

  /** The real gateway, counting what a provider opens and closes through it. */
  const counting = (counts: { opened: number; closed: number }): EgressGateway => ({
    brokersCredentials: real.brokersCredentials,
    async open(request) {
      const attachment = await real.open(request);
      counts.opened += 1;
      return {
        ...attachment,
        close: async () => {
          counts.closed += 1;
          await attachment.close();
        },
      };
    },
  });

  const run = async (target: LocalSandbox, script: string) => {
    const r = await target.exec(hidden(`${script}\necho PROBE_RAN`), { timeoutMs: 60_000 });
    expect(r.stdout).toContain('PROBE_RAN');
    return `${r.stdout}${r.stderr}`;
  };

  beforeAll(async () => {
    base = await mkdtemp(path.join(os.tmpdir(), 'sbx-egress-'));
    socketRoot = await mkdtemp(path.join(os.tmpdir(), 'sbx-egs-'));
    // As /tmp: the sandbox's host user must be able to search the root of the socket directories.
    await chmod(socketRoot, 0o711);
    upstream = createServer((_req, res) => res.end(token));
    await new Promise<void>((resolve) => upstream.listen(0, LOOPBACK, resolve));
    port = (upstream.address() as AddressInfo).port;
    proxy = new EgressProxy({
      resolve: async (host) => {
        if (host === 'allowed.test' || host === 'denied.test') return [LOOPBACK];
        throw new Error(`no test address for ${host}`);
      },
      allowPrivate: (address) => address === LOOPBACK,
    });
    real = new EgressProxyGateway(proxy, { socketRoot });
    provider = new LocalSandboxProvider({
      baseDir: base,
      isolation: 'bwrap',
      egress: counting(attachments),
      logger: silentLogger,
    });
    gatewayNone = new LocalSandboxProvider({
      baseDir: base,
      isolation: 'bwrap',
      logger: silentLogger,
    });
    const id = await provider.acquire({
      userId: 'u',
      threadId: 'egress',
      spec: { network: { mode: 'allowlist', allow: ['allowed.test'] } },
    });
    sandbox = provider.get(id)!;
  }, 120_000);

  afterAll(async () => {
    await provider?.shutdown();
    await gatewayNone?.shutdown();
    await proxy?.close();
    await new Promise<void>((resolve) => (upstream ? upstream.close(() => resolve()) : resolve()));
    await rm(base, { recursive: true, force: true });
    await rm(socketRoot, { recursive: true, force: true });
  });

  it('an allowed host answers through HTTP_PROXY (curl)', async () => {
    const out = await run(sandbox, `curl -sS --max-time 20 http://allowed.test:${port}/`);
    expect(out).toContain(token);
  }, 120_000);

  it('an allowed host answers through HTTP_PROXY (a node client speaking to the proxy)', async () => {
    const client = [
      'const u = new URL(process.env.HTTP_PROXY);',
      "const s = require('net').connect(Number(u.port), u.hostname);",
      `s.write('GET http://allowed.test:${port}/ HTTP/1.1\\r\\nHost: allowed.test:${port}\\r\\n\\r\\n');`,
      's.pipe(process.stdout);',
    ].join('\n');
    const out = await run(
      sandbox,
      `node -e "$(printf %s ${Buffer.from(client).toString('base64')} | base64 -d)"`,
    );
    expect(out).toMatch(/HTTP\/1\.1 200/);
    expect(out).toContain(token);
  }, 120_000);

  it('attack: a host off the allow list is refused by the proxy with 403', async () => {
    const out = await run(
      sandbox,
      `curl -sS --max-time 20 -o /dev/null -w 'CODE=%{http_code}\\n' http://denied.test:${port}/`,
    );
    expect(out).toContain('CODE=403');
    expect(out).not.toContain(token);
  }, 120_000);

  it('attack: a direct TCP connection to a host loopback service does not leave the namespace', async () => {
    const out = await run(
      sandbox,
      `curl -sS --noproxy '*' --max-time 10 http://${LOOPBACK}:${port}/ || echo DIRECT_FAILED`,
    );
    expect(out).toContain('DIRECT_FAILED');
    expect(out).not.toContain(token);
  }, 120_000);

  it('attack: DNS from inside fails (no resolver, no route to a public one)', async () => {
    const probe = [
      "const dns = require('dns');",
      "dns.lookup('example.com', (e) => console.log(e ? 'LOOKUP_FAILED' : 'LOOKUP_WORKED'));",
      "const s = require('dgram').createSocket('udp4');",
      "s.send(Buffer.alloc(12), 53, '8.8.8.8', (e) => { console.log(e ? 'UDP_FAILED ' + e.code : 'UDP_SENT'); s.close(); });",
    ].join('\n');
    const out = await run(
      sandbox,
      `node -e "$(printf %s ${Buffer.from(probe).toString('base64')} | base64 -d)"`,
    );
    expect(out).toContain('LOOKUP_FAILED');
    expect(out).toMatch(/UDP_FAILED (ENETUNREACH|EPERM|EACCES)/);
  }, 120_000);

  it('a failing gateway fails the command with its error, and the next command tries again', async () => {
    let fail = true;
    const flaky: EgressGateway = {
      brokersCredentials: false,
      open: (request) =>
        fail ? Promise.reject(new Error('gateway unavailable')) : real.open(request),
    };
    const own = new LocalSandboxProvider({
      baseDir: base,
      isolation: 'bwrap',
      egress: flaky,
      logger: silentLogger,
    });
    const id = await own.acquire({ userId: 'u', threadId: 'flaky' });
    const error = await own
      .get(id)!
      .exec('true')
      .catch((e: unknown) => e);
    expect(String(error)).toContain('gateway unavailable');
    expect(own.confinedInitPid(id)).toBeUndefined();
    fail = false;
    const out = await run(own.get(id)!, `curl -sS --max-time 20 http://allowed.test:${port}/`);
    expect(out).toContain(token);
    await own.shutdown();
  }, 120_000);

  it("eviction from the cache closes the evicted sandbox's attachment", async () => {
    const counts = { opened: 0, closed: 0 };
    const own = new LocalSandboxProvider({
      baseDir: base,
      isolation: 'bwrap',
      egress: counting(counts),
      maxCachedThreads: 1,
      logger: silentLogger,
    });
    const first = await own.acquire({ userId: 'u', threadId: 'evict-1' });
    await run(own.get(first)!, 'true');
    await own.acquire({ userId: 'u', threadId: 'evict-2' });
    await vi.waitFor(() => expect(counts.closed).toBe(1), { timeout: 30_000 });
    await own.shutdown();
  }, 120_000);

  it('attack: unsetting HTTP_PROXY gives no route out (no resolver, no route to any address)', async () => {
    const host = Object.values(os.networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
    const out = await run(
      sandbox,
      [
        'unset HTTP_PROXY HTTPS_PROXY http_proxy https_proxy ALL_PROXY all_proxy',
        `curl -sS --max-time 10 http://allowed.test:${port}/ || echo NAME_FAILED`,
        host
          ? `curl -sS --max-time 10 http://${host}:${port}/ || echo ADDRESS_FAILED`
          : 'echo ADDRESS_FAILED',
        "node -e \"require('dns').lookup('example.com', (e) => console.log(e ? 'DNS_FAILED' : 'DNS_WORKED'))\"",
      ].join('\n'),
    );
    expect(out).toContain('NAME_FAILED');
    expect(out).toContain('ADDRESS_FAILED');
    expect(out).toContain('DNS_FAILED');
    expect(out).not.toContain(token);
  }, 120_000);

  it('attack: the forwarder reaches nothing but the proxy (CONNECT to a loopback address, origin-form GET)', async () => {
    const out = await run(
      sandbox,
      [
        // NO_PROXY names loopback: the proxy is named explicitly so the request goes to it.
        `curl -sS --max-time 10 --noproxy '' -x "$HTTP_PROXY" -p -o /dev/null -w 'TUNNEL=%{http_code}\\n' https://${LOOPBACK}:${port}/ || true`,
        "curl -sS --max-time 10 -o /dev/null -w 'ORIGIN=%{http_code}\\n' --noproxy '*' http://127.0.0.1:3128/ || true",
      ].join('\n'),
    );
    expect(out).toMatch(/CONNECT tunnel failed, response 403/);
    expect(out).toContain('ORIGIN=400');
    expect(out).not.toContain(token);
  }, 120_000);

  it('attack: the forwarder and the init run without the seccomp filter, and no command can write their memory or trace them', async () => {
    // Every process of the namespace without a filter (the init's shell, the forwarder): a
    // command that could write one's memory would run unfiltered code outside the thread's cgroup.
    const out = await run(
      sandbox,
      [
        'for d in /proc/[0-9]*; do',
        '  grep -q "^Seccomp:[[:space:]]*0" "$d/status" 2>/dev/null || continue',
        '  echo "UNFILTERED=${d#/proc/}"',
        '  if (exec 3<>"$d/mem") 2>/dev/null; then echo "MEM_WRITABLE=${d#/proc/}"; fi',
        '  if head -c 1 "$d/maps" >/dev/null 2>&1; then echo "MAPS_READABLE=${d#/proc/}"; fi',
        'done',
        // The probe's own way of opening works where the kernel allows it (its own memory).
        'if (exec 3<>/proc/self/mem) 2>/dev/null; then echo SELF_MEM_WRITABLE; fi',
      ].join('\n'),
    );
    expect(out).toContain('SELF_MEM_WRITABLE');
    // The forwarder is one of them (node running its script), so the check saw it.
    expect(out.match(/UNFILTERED=/g)?.length ?? 0).toBeGreaterThanOrEqual(2);
    expect(out).not.toContain('MEM_WRITABLE=');
    expect(out).not.toContain('MAPS_READABLE=');
  }, 120_000);

  it('mode none: no forwarder and no proxy variables, even with a gateway', async () => {
    const id = await provider.acquire({
      userId: 'u',
      threadId: 'egress',
      spec: { network: { mode: 'none' } },
    });
    expect(id).not.toBe(sandbox.id);
    const before = attachments.opened;
    const out = await run(
      provider.get(id)!,
      [
        'echo "PROXY=${HTTP_PROXY:-unset}"',
        `curl -sS --max-time 10 -x http://127.0.0.1:3128 http://allowed.test:${port}/ || echo NONE_FAILED`,
      ].join('\n'),
    );
    expect(out).toContain('PROXY=unset');
    expect(out).toContain('NONE_FAILED');
    expect(out).not.toContain(token);
    expect(attachments.opened).toBe(before);
  }, 120_000);

  it('the attachment lives with the namespace: closed at release, opened again by the next command', async () => {
    await run(sandbox, 'true');
    const opened = attachments.opened;
    const closed = attachments.closed;
    await provider.release(sandbox.id);
    expect(attachments.closed).toBe(closed + 1);
    expect(await readdir(socketRoot)).toHaveLength(attachments.opened - attachments.closed);
    const out = await run(sandbox, `curl -sS --max-time 20 http://allowed.test:${port}/`);
    expect(out).toContain(token);
    expect(attachments.opened).toBe(opened + 1);
  }, 120_000);

  it('attack: killing the forwarder (to take its port) ends the namespace; the next command gets a fresh one', async () => {
    await run(sandbox, 'true');
    const initBefore = provider.confinedInitPid(sandbox.id);
    const opened = attachments.opened;
    const closed = attachments.closed;
    const takeover = [
      'for p in /proc/[0-9]*; do',
      `  if tr '\\0' ' ' < "$p/cmdline" 2>/dev/null | grep -q '^/run/sbx-egress/'; then kill -9 "\${p#/proc/}"; fi`,
      'done',
      'sleep 2',
      // Had the namespace survived, this listener would now be HTTP_PROXY.
      `node -e "require('net').createServer((c) => c.end('HIJACKED')).listen(3128, '127.0.0.1')" &`,
      'sleep 2; echo SURVIVED',
    ].join('\n');
    const killed = await sandbox
      .exec(hidden(takeover), { timeoutMs: 60_000 })
      .then((r) => `${r.stdout}${r.stderr}`)
      .catch((error: unknown) => String(error));
    expect(killed).not.toContain('SURVIVED');
    const out = await run(sandbox, `curl -sS --max-time 20 http://allowed.test:${port}/`);
    expect(out).toContain(token);
    expect(out).not.toContain('HIJACKED');
    expect(provider.confinedInitPid(sandbox.id)).not.toBe(initBefore);
    expect(attachments.opened).toBe(opened + 1);
    expect(attachments.closed).toBe(closed + 1);
  }, 120_000);

  it('shutdown closes every attachment, also one a command opened again after a release', async () => {
    const counts = { opened: 0, closed: 0 };
    const own = new LocalSandboxProvider({
      baseDir: base,
      isolation: 'bwrap',
      egress: counting(counts),
      logger: silentLogger,
    });
    const id = await own.acquire({ userId: 'u', threadId: 'lifecycle' });
    await run(own.get(id)!, 'true');
    await own.release(id);
    await run(own.get(id)!, `curl -sS --max-time 20 http://allowed.test:${port}/ || true`);
    expect(counts).toEqual({ opened: 2, closed: 1 });
    await own.shutdown();
    expect(counts).toEqual({ opened: 2, closed: 2 });
  }, 120_000);

  it('brokering: the placeholder is in the environment and the gateway CA is trusted, read-only', async () => {
    const ca = await EgressCertificateAuthority.generate();
    const brokeringProxy = new EgressProxy({ certificateAuthority: ca, secretEnv: {} });
    const own = new LocalSandboxProvider({
      baseDir: base,
      isolation: 'bwrap',
      egress: new EgressProxyGateway(brokeringProxy, { socketRoot, brokersCredentials: true }),
      config: {
        specPolicy: {
          images: [],
          network: parseNetworkPolicy({
            mode: 'allowlist',
            allow: ['api.test'],
            credentials: [
              {
                host: 'api.test',
                header: 'authorization',
                source: { kind: 'env', name: 'API_TOKEN' },
              },
            ],
          }),
        },
      },
      logger: silentLogger,
    });
    try {
      const id = await own.acquire({ userId: 'u', threadId: 'broker' });
      const firstLine = ca.certificatePem.split('\n')[1]!;
      const out = await run(
        own.get(id)!,
        [
          'echo "TOKEN=$API_TOKEN"',
          `grep -c '${firstLine}' "$SSL_CERT_FILE"`,
          '[ "$NODE_EXTRA_CA_CERTS" = "$SSL_CERT_FILE" ] && echo SAME',
          '(echo x >> "$SSL_CERT_FILE") 2>/dev/null || echo READ_ONLY',
        ].join('\n'),
      );
      expect(out).toMatch(/TOKEN=sbx-placeholder-/);
      expect(out).toMatch(/^1$/m);
      expect(out).toContain('SAME');
      expect(out).toContain('READ_ONLY');
    } finally {
      await own.shutdown();
      await brokeringProxy.close();
    }
  }, 120_000);

  it('without a gateway a filtered policy is refused, and mode none is enforced', async () => {
    const error = await gatewayNone
      .acquire({
        userId: 'u',
        threadId: 'nogw',
        spec: { network: { mode: 'allowlist', allow: ['allowed.test'] } },
      })
      .catch((e: unknown) => e);
    expect(isSbxError(error) && error.code).toBe('NETWORK_POLICY_UNENFORCEABLE');
    const id = await gatewayNone.acquire({
      userId: 'u',
      threadId: 'nogw',
      spec: { network: { mode: 'none' } },
    });
    const out = await run(
      gatewayNone.get(id)!,
      `curl -sS --noproxy '*' --max-time 10 http://${LOOPBACK}:${port}/ || echo NONE_FAILED`,
    );
    expect(out).toContain('NONE_FAILED');
  }, 120_000);
});
