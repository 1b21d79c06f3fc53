import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isSbxError, parseNetworkPolicy, type NetworkPolicyInput } from '@sbx/core';
import { EgressProxy } from './egress-proxy.js';
import { EgressProxyGateway } from './egress-gateway.js';
import { EgressCertificateAuthority } from './egress-certificate-authority.js';

const LOOPBACK = '127.0.0.1';
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup() {
  const upstream: Server = createServer((_req, res) => res.end('upstream says hi'));
  await new Promise<void>((resolve) => upstream.listen(0, LOOPBACK, resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        upstream.closeAllConnections();
        upstream.close(() => resolve());
      }),
  );
  const proxy = new EgressProxy({
    resolve: async () => [LOOPBACK],
    allowPrivate: (address) => address === LOOPBACK,
  });
  cleanups.push(() => proxy.close());
  const root = await mkdtemp(path.join(tmpdir(), 'egw-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  return {
    gateway: new EgressProxyGateway(proxy, { socketRoot: root }),
    port: (upstream.address() as AddressInfo).port,
  };
}

const policy = (input: NetworkPolicyInput) => parseNetworkPolicy(input);

/** One plain-HTTP request through the socket; the status line and body. */
function request(socketPath: string, host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
    socket.write(`GET http://${host}:${port}/ HTTP/1.1\r\nHost: ${host}:${port}\r\n\r\n`);
  });
}

describe('EgressProxyGateway', () => {
  it('gives each sandbox a unix socket in a private directory, enforcing its policy', async () => {
    const { gateway, port } = await setup();
    const attachment = await gateway.open({
      sandboxId: 'local:u:t',
      threadId: 't',
      userId: 'u',
      policy: policy({ mode: 'allowlist', allow: ['allowed.test'] }),
    });
    expect(attachment.env).toEqual({});
    expect((await stat(path.dirname(attachment.socketPath))).mode & 0o777).toBe(0o700);
    expect((await stat(attachment.socketPath)).isSocket()).toBe(true);
    expect((await stat(attachment.socketPath)).mode & 0o777).toBe(0o600);
    expect(await request(attachment.socketPath, 'allowed.test', port)).toMatch(
      /^HTTP\/1\.1 200[\s\S]*upstream says hi/,
    );
    expect(await request(attachment.socketPath, 'denied.test', port)).toMatch(/^HTTP\/1\.1 403/);
    await attachment.close();
    await attachment.close();
    await expect(stat(path.dirname(attachment.socketPath))).rejects.toThrow();
  });

  it.skipIf(process.getuid?.() !== 0)(
    'hands the socket and its directory to the sandbox user it names (a root gateway)',
    async () => {
      const { gateway } = await setup();
      const attachment = await gateway.open({
        sandboxId: 's',
        policy: policy({ mode: 'none' }),
        socketOwner: { uid: 65534, gid: 65534 },
      });
      for (const entry of [attachment.socketPath, path.dirname(attachment.socketPath)]) {
        const info = await stat(entry);
        expect([info.uid, info.gid]).toEqual([65534, 65534]);
      }
      await attachment.close();
    },
  );

  it('attack: a policy with credentials is refused, not opened without them', async () => {
    const { gateway } = await setup();
    const error = await gateway
      .open({
        sandboxId: 's',
        policy: {
          ...policy({ mode: 'open' }),
          credentials: [
            { host: 'api.test', header: 'authorization', source: { kind: 'env', name: 'T' } },
          ],
        },
      })
      .catch((e: unknown) => e);
    expect(isSbxError(error) && error.code).toBe('NETWORK_POLICY_UNENFORCEABLE');
  });

  it('brokering: the attachment carries the placeholder under the secret_env name, and the CA', async () => {
    const ca = await EgressCertificateAuthority.generate();
    const proxy = new EgressProxy({ certificateAuthority: ca, secretEnv: {} });
    const root = await mkdtemp(path.join(tmpdir(), 'egw-'));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    cleanups.push(() => proxy.close());
    const gateway = new EgressProxyGateway(proxy, { socketRoot: root, brokersCredentials: true });
    expect(gateway.brokersCredentials).toBe(true);
    const attachment = await gateway.open({
      sandboxId: 'b',
      policy: {
        ...policy({ mode: 'allowlist', allow: ['api.test'] }),
        credentials: [
          { host: 'api.test', header: 'authorization', source: { kind: 'env', name: 'API_TOKEN' } },
          { host: 'api.test', header: 'x-key', source: { kind: 'provider', name: 'vault/key' } },
          // A name the sandbox's environment check would refuse on every command.
          { host: 'api.test', header: 'x-other', source: { kind: 'env', name: 'ODD.NAME' } },
        ],
      },
    });
    expect(Object.keys(attachment.env)).toEqual(['API_TOKEN']);
    expect(attachment.env.API_TOKEN).toMatch(/^sbx-placeholder-/);
    expect(attachment.caCertificatePem).toBe(ca.certificatePem);
    await attachment.close();
  });

  it('one secret_env serving two hosts: the sandbox holds one placeholder, and both hosts swap it', async () => {
    const ca = await EgressCertificateAuthority.generate();
    const proxy = new EgressProxy({ certificateAuthority: ca, secretEnv: { TOKEN: 'secret' } });
    const root = await mkdtemp(path.join(tmpdir(), 'egw-'));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    cleanups.push(() => proxy.close());
    const gateway = new EgressProxyGateway(proxy, { socketRoot: root, brokersCredentials: true });
    const attachment = await gateway.open({
      sandboxId: 'shared',
      policy: {
        ...policy({ mode: 'allowlist', allow: ['a.test', 'b.test'] }),
        credentials: [
          { host: 'a.test', header: 'authorization', source: { kind: 'env', name: 'TOKEN' } },
          { host: 'b.test', header: 'x-token', source: { kind: 'env', name: 'TOKEN' } },
        ],
      },
    });
    expect(Object.keys(attachment.env)).toEqual(['TOKEN']);
    expect(attachment.env.TOKEN).toMatch(/^sbx-placeholder-/);
    await attachment.close();
    // What the proxy swaps for each host: the very placeholder the variable holds.
    const listener = await proxy.openSandbox({
      sandboxId: 'shared-direct',
      policy: parseNetworkPolicy(
        {
          mode: 'allowlist',
          allow: ['a.test', 'b.test'],
          credentials: [
            { host: 'a.test', header: 'authorization', source: { kind: 'env', name: 'TOKEN' } },
            { host: 'b.test', header: 'x-token', source: { kind: 'env', name: 'TOKEN' } },
          ],
        },
        'policy',
      ),
      listen: { port: 0, host: '127.0.0.1' },
    });
    const [a, b] = listener.placeholders;
    expect([a?.host, b?.host]).toEqual(['a.test', 'b.test']);
    expect(a?.placeholder).toBe(b?.placeholder);
    await listener.close();
  });

  it('attack: brokering configured on a proxy without a CA fails the open, and leaves nothing behind', async () => {
    const proxy = new EgressProxy();
    cleanups.push(() => proxy.close());
    const root = await mkdtemp(path.join(tmpdir(), 'egw-'));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    const gateway = new EgressProxyGateway(proxy, { socketRoot: root, brokersCredentials: true });
    const error = await gateway
      .open({
        sandboxId: 'b',
        policy: {
          ...policy({ mode: 'open' }),
          credentials: [
            { host: 'api.test', header: 'authorization', source: { kind: 'env', name: 'T' } },
          ],
        },
      })
      .catch((e: unknown) => e);
    expect(isSbxError(error) && error.code).toBe('INVALID_ARGUMENT');
    expect(await readdir(root)).toEqual([]);
  });

  it('a second listener for one sandbox is refused and leaves no directory behind', async () => {
    const { gateway } = await setup();
    const first = await gateway.open({ sandboxId: 's', policy: policy({ mode: 'open' }) });
    const root = path.dirname(path.dirname(first.socketPath));
    const error = await gateway
      .open({ sandboxId: 's', policy: policy({ mode: 'open' }) })
      .catch((e: unknown) => e);
    expect(isSbxError(error) && error.code).toBe('INVALID_ARGUMENT');
    expect(await readdir(root)).toEqual([path.basename(path.dirname(first.socketPath))]);
    await first.close();
  });

  it('refuses a socket root too long for a unix socket path at construction', () => {
    const proxy = new EgressProxy();
    expect(() => new EgressProxyGateway(proxy, { socketRoot: `/${'d'.repeat(100)}` })).toThrow(
      /too long for a unix socket path/,
    );
  });
});
