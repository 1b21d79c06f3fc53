import { randomBytes } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, type AddressInfo, type Server } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isSbxError, parseNetworkPolicy, type Logger, type NetworkPolicyInput } from '@sbx/core';
import { EgressCertificateAuthority } from './egress-certificate-authority.js';
import type { EgressDecisionEvent } from './egress-events.js';
import {
  EgressProxy,
  type EgressProxyOptions,
  type EgressSandboxListener,
} from './egress-proxy.js';
import { PLACEHOLDER_PREFIX } from './placeholder-scanner.js';

// Loopback only: every test host name is mapped to 127.0.0.1 by the proxy's resolver; upstreams
// are HTTPS servers on 127.0.0.1 with certificates of a test CA the proxy is told to trust.
const LOOPBACK = '127.0.0.1';
const HOSTS = ['api.test', 'other.test', 'denied.test', 'redirect.test', 'badcert.test'];
// Built at run time: a secret no source file contains, so finding it anywhere is a real leak.
const SECRET = `real-${randomBytes(12).toString('hex')}`;

let gatewayCa: EgressCertificateAuthority;
let upstreamCa: EgressCertificateAuthority;
let rogueCa: EgressCertificateAuthority;
beforeAll(async () => {
  [gatewayCa, upstreamCa, rogueCa] = await Promise.all([
    EgressCertificateAuthority.generate(),
    EgressCertificateAuthority.generate(),
    EgressCertificateAuthority.generate(),
  ]);
});

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function listening(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, LOOPBACK, resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => resolve());
      }),
  );
  return (server.address() as AddressInfo).port;
}

interface Seen {
  host: string | undefined;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  /** Every body byte that reached the upstream, complete request or not. */
  body: string;
}

/** An HTTPS upstream for every test host (badcert.test shows a certificate nobody trusts). */
async function httpsUpstream(
  answer: (seen: Seen) => { status: number; headers?: Record<string, string> } = () => ({
    status: 200,
  }),
): Promise<{ port: number; seen: Seen[]; raw: () => string }> {
  const seen: Seen[] = [];
  const server = createHttpsServer({
    SNICallback: (name, done) => {
      const ca = name === 'badcert.test' ? rogueCa : upstreamCa;
      ca.secureContextFor(name).then(
        (context) => done(null, context),
        (error: Error) => done(error),
      );
    },
  });
  server.on('request', (req, res) => {
    const entry: Seen = {
      host: req.headers.host,
      url: req.url ?? '',
      headers: req.headers,
      body: '',
    };
    seen.push(entry);
    req.on('data', (chunk: Buffer) => (entry.body += chunk.toString('latin1')));
    req.on('end', () => {
      const a = answer(entry);
      res.writeHead(a.status, a.headers);
      res.end('ok');
    });
  });
  server.on('tlsClientError', () => {});
  const port = await listening(server as unknown as Server);
  return { port, seen, raw: () => JSON.stringify(seen) };
}

interface Harness {
  proxy: EgressProxy;
  events: EgressDecisionEvent[];
  logs: string[];
  open(
    policy: NetworkPolicyInput,
    sandboxId?: string,
    brokering?: boolean,
  ): Promise<EgressSandboxListener>;
}

function harness(options: Partial<EgressProxyOptions> = {}): Harness {
  const logs: string[] = [];
  const record =
    (level: string) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      logs.push(
        `${level} ${msg} ${JSON.stringify(fields ?? {}, (_k, v: unknown) => (v instanceof Error ? v.message : v))}`,
      );
    };
  const logger: Logger = {
    debug: record('debug'),
    info: record('info'),
    warn: record('warn'),
    error: record('error'),
  };
  const proxy = new EgressProxy({
    resolve: async (host) => {
      if (!HOSTS.includes(host)) throw new Error(`no test address for ${host}`);
      return [LOOPBACK];
    },
    allowPrivate: (a) => a === LOOPBACK,
    certificateAuthority: gatewayCa,
    upstreamCa: [upstreamCa.certificatePem],
    secretEnv: { API_TOKEN: SECRET },
    logger,
    ...options,
  });
  const events: EgressDecisionEvent[] = [];
  proxy.onEvent((e) => events.push(e));
  cleanups.push(() => proxy.close());
  return {
    proxy,
    events,
    logs,
    async open(policy, sandboxId = 'sbx-1', brokering) {
      return proxy.openSandbox({
        sandboxId,
        threadId: `thread-${sandboxId}`,
        policy: parseNetworkPolicy(policy),
        listen: { host: LOOPBACK, port: 0 },
        ...(brokering === undefined ? {} : { brokering }),
      });
    },
  };
}

const POLICY: NetworkPolicyInput = {
  mode: 'allowlist',
  allow: ['api.test', 'other.test', 'redirect.test', 'badcert.test'],
  credentials: [
    { host: 'api.test', header: 'Authorization', source: { kind: 'env', name: 'API_TOKEN' } },
  ],
};

const portOf = (listener: EgressSandboxListener): number => {
  if (!('port' in listener.address)) throw new Error('expected a TCP listener');
  return listener.address.port;
};

/** CONNECT `host:port` through the proxy; the CONNECT answer line, and the socket if it was 200. */
function connectThrough(
  proxyPort: number,
  target: string,
  extraHead = '',
): Promise<{ status: string; socket: ReturnType<typeof connect> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(proxyPort, LOOPBACK);
    let data = '';
    const onData = (c: Buffer) => {
      data += c.toString('latin1');
      if (data.indexOf('\r\n\r\n') === -1) return;
      socket.off('data', onData);
      resolve({ status: data, socket });
    };
    socket.on('data', onData);
    socket.on('error', reject);
    socket.on('close', () => resolve({ status: data, socket }));
    socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${extraHead}\r\n`);
  });
}

/** A TLS session through the proxy to `host`, trusting only the gateway CA (as a sandbox would). */
async function tlsThrough(
  proxyPort: number,
  host: string,
  upstreamPort: number,
  alpn?: string[],
): Promise<TLSSocket> {
  const { status, socket } = await connectThrough(proxyPort, `${host}:${upstreamPort}`);
  expect(status).toMatch(/^HTTP\/1\.1 200/);
  const tls = tlsConnect({
    socket,
    servername: host,
    ca: gatewayCa.certificatePem,
    ...(alpn ? { ALPNProtocols: alpn } : {}),
  });
  await new Promise<void>((resolve, reject) => {
    tls.once('secureConnect', resolve);
    tls.once('error', reject);
  });
  return tls;
}

/** Writes each part as its own write, then everything the other side sends until it closes. */
function converse(
  socket: TLSSocket | ReturnType<typeof connect>,
  parts: (string | Buffer)[],
): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => {});
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    const next = (i: number) => {
      if (i >= parts.length || socket.destroyed) return;
      socket.write(parts[i]!, () => next(i + 1));
    };
    next(0);
  });
}

/** Sends plain HTTP to the proxy and returns what it answers until it closes. */
function plain(proxyPort: number, parts: (string | Buffer)[]): Promise<string> {
  const socket = connect(proxyPort, LOOPBACK);
  return converse(socket, parts);
}

const reasons = (events: EgressDecisionEvent[]) =>
  events.map((e) => `${e.method}:${e.verdict}:${e.reason}`);

function expectNoLeak(h: Harness, placeholder: string): void {
  const text = JSON.stringify(h.events) + h.logs.join('\n');
  expect(text).not.toContain(SECRET);
  expect(text).not.toContain(placeholder);
}

describe('credential brokering', () => {
  it('swaps the placeholder for the secret in the configured header, two requests on one kept-alive connection', async () => {
    const h = harness();
    const upstream = await httpsUpstream();
    const listener = await h.open(POLICY);
    expect(listener.caCertificatePem).toBe(gatewayCa.certificatePem);
    const placeholder = listener.placeholders[0]!.placeholder;
    expect(placeholder.startsWith(PLACEHOLDER_PREFIX)).toBe(true);
    expect(placeholder).not.toContain(SECRET);
    const tls = await tlsThrough(portOf(listener), 'api.test', upstream.port);
    const host = `api.test:${upstream.port}`;
    const answer = await converse(tls, [
      `POST /v1/one HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${placeholder}\r\nContent-Length: 5\r\n\r\nhello`,
      `GET /v1/two HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${placeholder}\r\nConnection: close\r\n\r\n`,
    ]);
    expect(answer.match(/HTTP\/1\.1 200/g)).toHaveLength(2);
    expect(upstream.seen.map((s) => [s.url, s.headers.authorization, s.body])).toEqual([
      ['/v1/one', `Bearer ${SECRET}`, 'hello'],
      ['/v1/two', `Bearer ${SECRET}`, ''],
    ]);
    expect(answer).not.toContain(SECRET);
    expect(reasons(h.events)).toEqual([
      'CONNECT:allow:allowed',
      'HTTPS:allow:credential-swapped',
      'HTTPS:allow:credential-swapped',
    ]);
    expectNoLeak(h, placeholder);
  });

  it('streams a chunked body through, de-chunked and re-framed', async () => {
    const h = harness();
    const upstream = await httpsUpstream();
    const listener = await h.open(POLICY);
    const tls = await tlsThrough(portOf(listener), 'api.test', upstream.port);
    const answer = await converse(tls, [
      `POST /up HTTP/1.1\r\nHost: api.test:${upstream.port}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`,
      '5;ext=1\r\nhello\r\n',
      '6\r\n world\r\n0\r\n\r\n',
    ]);
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(upstream.seen[0]!.body).toBe('hello world');
  });

  it('attack: a placeholder sent to a denied host in a header, a body, a query string is refused and logged', async () => {
    const h = harness();
    const upstream = await httpsUpstream();
    const listener = await h.open(POLICY);
    const placeholder = listener.placeholders[0]!.placeholder;
    const port = portOf(listener);
    const target = `denied.test:${upstream.port}`;
    // Plain HTTP: the head is read before the decision, so the placeholder is what is reported.
    const inHeader = await plain(port, [
      `GET http://${target}/ HTTP/1.1\r\nHost: ${target}\r\nAuthorization: Bearer ${placeholder}\r\n\r\n`,
    ]);
    expect(inHeader).toMatch(/^HTTP\/1\.1 403[\s\S]*placeholder-in-header/);
    const inQuery = await plain(port, [
      `GET http://${target}/?token=${placeholder} HTTP/1.1\r\nHost: ${target}\r\n\r\n`,
    ]);
    expect(inQuery).toMatch(/^HTTP\/1\.1 403[\s\S]*placeholder-in-request-line/);
    const inBody = await plain(port, [
      `POST http://${target}/ HTTP/1.1\r\nHost: ${target}\r\nContent-Length: ${placeholder.length}\r\n\r\n`,
      placeholder,
    ]);
    expect(inBody).toMatch(/^HTTP\/1\.1 403[\s\S]*not-allowed/);
    // Over CONNECT the tunnel itself is refused: nothing reaches denied.test at all.
    const tunnel = await connectThrough(
      port,
      target,
      `Proxy-Authorization: Basic ${placeholder}\r\n`,
    );
    expect(tunnel.status).toMatch(/^HTTP\/1\.1 403[\s\S]*placeholder-in-connect/);
    const plainTunnel = await connectThrough(port, target);
    expect(plainTunnel.status).toMatch(/^HTTP\/1\.1 403[\s\S]*not-allowed/);
    expect(upstream.seen).toEqual([]);
    expect(h.logs.filter((l) => l.startsWith('warn egress placeholder refused'))).toHaveLength(3);
    expectNoLeak(h, placeholder);
  });

  it('attack: a placeholder to an allowed host with no credential for it is refused before anything is forwarded', async () => {
    const h = harness();
    const upstream = await httpsUpstream();
    const listener = await h.open(POLICY);
    const placeholder = listener.placeholders[0]!.placeholder;
    const tls = await tlsThrough(portOf(listener), 'other.test', upstream.port);
    const answer = await converse(tls, [
      `GET / HTTP/1.1\r\nHost: other.test:${upstream.port}\r\nAuthorization: Bearer ${placeholder}\r\n\r\n`,
    ]);
    expect(answer).toMatch(/^HTTP\/1\.1 403[\s\S]*placeholder-in-header/);
    expect(upstream.seen).toEqual([]);
    expect(reasons(h.events)).toEqual([
      'CONNECT:allow:allowed',
      'HTTPS:deny:placeholder-in-header',
    ]);
    expectNoLeak(h, placeholder);
  });

  it('attack: a placeholder in another header than the configured one is refused', async () => {
    const h = harness();
    const upstream = await httpsUpstream();
    const listener = await h.open(POLICY);
    const placeholder = listener.placeholders[0]!.placeholder;
    const tls = await tlsThrough(portOf(listener), 'api.test', upstream.port);
    const answer = await converse(tls, [
      `GET / HTTP/1.1\r\nHost: api.test:${upstream.port}\r\nX-Echo: ${placeholder}\r\n\r\n`,
    ]);
    expect(answer).toMatch(/^HTTP\/1\.1 403[\s\S]*placeholder-in-header/);
    expect(upstream.seen).toEqual([]);
  });

  it('attack: a placeholder in the query string of an allowed host is refused, percent-encoded too', async () => {
    const h = harness();
    const upstream = await httpsUpstream();
    const listener = await h.open(POLICY);
    const placeholder = listener.placeholders[0]!.placeholder;
    for (const query of [placeholder, placeholder.replace(/-/g, '%2D')]) {
      const tls = await tlsThrough(portOf(listener), 'api.test', upstream.port);
      const answer = await converse(tls, [
        `GET /?q=${query} HTTP/1.1\r\nHost: api.test:${upstream.port}\r\n\r\n`,
      ]);
      expect(answer).toMatch(/^HTTP\/1\.1 403[\s\S]*placeholder-in-request-line/);
    }
    expect(upstream.seen).toEqual([]);
  });

  it('attack: a placeholder in a body split across writes and chunk framing never reaches the upstream whole', async () => {
    const h = harness();
    const upstream = await httpsUpstream();
    const listener = await h.open(POLICY);
    const placeholder = listener.placeholders[0]!.placeholder;
    const half = 20;
    const tls = await tlsThrough(portOf(listener), 'api.test', upstream.port);
    const answer = await converse(tls, [
      `POST / HTTP/1.1\r\nHost: api.test:${upstream.port}\r\nTransfer-Encoding: chunked\r\n\r\n`,
      `${(4 + half).toString(16)}\r\nkey=${placeholder.slice(0, half)}\r\n`,
      `${(placeholder.length - half).toString(16)}\r\n${placeholder.slice(half)}\r\n0\r\n\r\n`,
    ]);
    expect(answer).toMatch(/^HTTP\/1\.1 403[\s\S]*placeholder-in-body/);
    expect(upstream.raw()).not.toContain(placeholder);
    expect(reasons(h.events)).toContain('HTTPS:deny:placeholder-in-body');
    expectNoLeak(h, placeholder);
  });

  it('attack: a placeholder in a Content-Length body is refused', async () => {
    const h = harness();
    const upstream = await httpsUpstream();
    const listener = await h.open(POLICY);
    const placeholder = listener.placeholders[0]!.placeholder;
    const body = `{"token":"${placeholder}"}`;
    const tls = await tlsThrough(portOf(listener), 'api.test', upstream.port);
    const answer = await converse(tls, [
      `POST / HTTP/1.1\r\nHost: api.test:${upstream.port}\r\nContent-Length: ${body.length}\r\n\r\n`,
      body.slice(0, 15),
      body.slice(15),
    ]);
    expect(answer).toMatch(/^HTTP\/1\.1 403[\s\S]*placeholder-in-body/);
    expect(upstream.raw()).not.toContain(placeholder);
  });

  it('attack: a redirect from the credential host to a denied host, followed with the placeholder, is refused', async () => {
    const h = harness();
    const upstream = await httpsUpstream((seen) =>
      seen.url === '/go-denied'
        ? {
            status: 302,
            headers: { location: `https://denied.test:${seen.host!.split(':')[1]}/steal` },
          }
        : {
            status: 302,
            headers: { location: `https://other.test:${seen.host!.split(':')[1]}/steal` },
          },
    );
    const listener = await h.open(POLICY);
    const placeholder = listener.placeholders[0]!.placeholder;
    const port = portOf(listener);
    const first = await converse(await tlsThrough(port, 'api.test', upstream.port), [
      `GET /go-denied HTTP/1.1\r\nHost: api.test:${upstream.port}\r\nAuthorization: Bearer ${placeholder}\r\nConnection: close\r\n\r\n`,
    ]);
    // The proxy passes the redirect back; the client follows it as a new request.
    const location = /location: https:\/\/([^/]+)\//i.exec(first)![1]!;
    expect(location).toBe(`denied.test:${upstream.port}`);
    const followed = await connectThrough(port, location);
    expect(followed.status).toMatch(/^HTTP\/1\.1 403[\s\S]*not-allowed/);
    // A redirect to an allowed host without the credential: the tunnel opens, the request does not.
    const second = await converse(await tlsThrough(port, 'api.test', upstream.port), [
      `GET /go-other HTTP/1.1\r\nHost: api.test:${upstream.port}\r\nAuthorization: Bearer ${placeholder}\r\nConnection: close\r\n\r\n`,
    ]);
    const other = /location: https:\/\/([^/]+)\//i.exec(second)![1]!;
    const refused = await converse(await tlsThrough(port, 'other.test', upstream.port), [
      `GET /steal HTTP/1.1\r\nHost: ${other}\r\nAuthorization: Bearer ${placeholder}\r\n\r\n`,
    ]);
    expect(refused).toMatch(/^HTTP\/1\.1 403[\s\S]*placeholder-in-header/);
    expect(upstream.seen.map((s) => s.url)).toEqual(['/go-denied', '/go-other']);
  });

  it('attack: a Host header naming another host inside an intercepted tunnel is refused', async () => {
    const h = harness();
    const upstream = await httpsUpstream();
    const listener = await h.open(POLICY);
    const placeholder = listener.placeholders[0]!.placeholder;
    const tls = await tlsThrough(portOf(listener), 'api.test', upstream.port);
    const answer = await converse(tls, [
      `GET / HTTP/1.1\r\nHost: other.test:${upstream.port}\r\nAuthorization: Bearer ${placeholder}\r\n\r\n`,
    ]);
    expect(answer).toMatch(/^HTTP\/1\.1 400[\s\S]*host-mismatch/);
    expect(upstream.seen).toEqual([]);
  });

  it('attack: an upstream whose certificate does not verify fails closed', async () => {
    const h = harness();
    const upstream = await httpsUpstream();
    const listener = await h.open(POLICY);
    const tls = await tlsThrough(portOf(listener), 'badcert.test', upstream.port);
    const answer = await converse(tls, [
      `GET / HTTP/1.1\r\nHost: badcert.test:${upstream.port}\r\n\r\n`,
    ]);
    expect(answer).toMatch(/^HTTP\/1\.1 502[\s\S]*upstream-tls-failed/);
    expect(upstream.seen).toEqual([]);
    expect(reasons(h.events)).toEqual(['CONNECT:deny:upstream-tls-failed']);
  });

  it('attack: the credential is never swapped onto plain HTTP', async () => {
    const h = harness();
    const upstream = createHttpServer((_req, res) => res.end('ok'));
    const seen: string[] = [];
    upstream.on('request', (req) => seen.push(req.url ?? ''));
    const upstreamPort = await listening(upstream as unknown as Server);
    const listener = await h.open(POLICY);
    const placeholder = listener.placeholders[0]!.placeholder;
    const target = `api.test:${upstreamPort}`;
    const answer = await plain(portOf(listener), [
      `GET http://${target}/ HTTP/1.1\r\nHost: ${target}\r\nAuthorization: Bearer ${placeholder}\r\n\r\n`,
    ]);
    expect(answer).toMatch(/^HTTP\/1\.1 403[\s\S]*credential-over-cleartext/);
    expect(seen).toEqual([]);
    // Without a placeholder, plain HTTP to the host works as before.
    const ok = await plain(portOf(listener), [
      `GET http://${target}/x HTTP/1.1\r\nHost: ${target}\r\n\r\n`,
    ]);
    expect(ok).toMatch(/^HTTP\/1\.1 200/);
    expect(seen).toEqual(['/x']);
  });

  it('a missing secret refuses the request instead of sending the placeholder', async () => {
    const h = harness({ secretEnv: {} });
    const upstream = await httpsUpstream();
    const listener = await h.open(POLICY);
    const placeholder = listener.placeholders[0]!.placeholder;
    const tls = await tlsThrough(portOf(listener), 'api.test', upstream.port);
    const answer = await converse(tls, [
      `GET / HTTP/1.1\r\nHost: api.test:${upstream.port}\r\nAuthorization: Bearer ${placeholder}\r\n\r\n`,
    ]);
    expect(answer).toMatch(/^HTTP\/1\.1 502[\s\S]*secret-unavailable/);
    expect(upstream.seen).toEqual([]);
    expect(h.logs.some((l) => l.startsWith('error egress secret unavailable'))).toBe(true);
  });

  it('a secret with a line break is refused, never written into the head', async () => {
    const h = harness({ secretProvider: async () => `x\r\nX-Injected: 1` });
    const upstream = await httpsUpstream();
    const listener = await h.open({
      ...POLICY,
      credentials: [
        { host: 'api.test', header: 'x-api-key', source: { kind: 'provider', name: 'api' } },
      ],
    });
    const placeholder = listener.placeholders[0]!.placeholder;
    const tls = await tlsThrough(portOf(listener), 'api.test', upstream.port);
    const answer = await converse(tls, [
      `GET / HTTP/1.1\r\nHost: api.test:${upstream.port}\r\nX-Api-Key: ${placeholder}\r\n\r\n`,
    ]);
    expect(answer).toMatch(/^HTTP\/1\.1 502[\s\S]*secret-unavailable/);
    expect(upstream.seen).toEqual([]);
  });

  it('request-scoped secrets opt in: placeholders in the env, swapped until released', async () => {
    const h = harness();
    const upstream = await httpsUpstream();
    const listener = await h.open({ mode: 'allowlist', allow: ['other.test'] }, 'sbx-2', true);
    const value = `scoped-${randomBytes(8).toString('hex')}`;
    const brokered = listener.brokerSecrets([
      { name: 'OTHER_KEY', host: 'other.test', header: 'X-Api-Key', value },
    ]);
    const placeholder = brokered.env.OTHER_KEY!;
    expect(placeholder.startsWith(PLACEHOLDER_PREFIX)).toBe(true);
    const request = `GET / HTTP/1.1\r\nHost: other.test:${upstream.port}\r\nX-Api-Key: ${placeholder}\r\nConnection: close\r\n\r\n`;
    const port = portOf(listener);
    expect(await converse(await tlsThrough(port, 'other.test', upstream.port), [request])).toMatch(
      /^HTTP\/1\.1 200/,
    );
    expect(upstream.seen[0]!.headers['x-api-key']).toBe(value);
    brokered.release();
    expect(await converse(await tlsThrough(port, 'other.test', upstream.port), [request])).toMatch(
      /^HTTP\/1\.1 403[\s\S]*placeholder-in-header/,
    );
    expect(upstream.seen).toHaveLength(1);
    expect(JSON.stringify(h.events) + h.logs.join('\n')).not.toContain(value);
    // A secret for a host the policy does not allow could only leak: refused when brokered.
    const refused = (() => {
      try {
        listener.brokerSecrets([{ name: 'X', host: 'denied.test', header: 'x-api-key', value }]);
      } catch (error) {
        return error;
      }
    })();
    expect(isSbxError(refused, 'INVALID_ARGUMENT')).toBe(true);
  });

  it('placeholders are stable per (sandbox, credential) and differ between sandboxes', async () => {
    const h = harness();
    const a = await h.open(POLICY, 'sbx-a');
    const first = a.placeholders[0]!.placeholder;
    await a.close();
    const again = await h.open(POLICY, 'sbx-a');
    const b = await h.open(POLICY, 'sbx-b');
    expect(again.placeholders[0]!.placeholder).toBe(first);
    expect(b.placeholders[0]!.placeholder).not.toBe(first);
  });

  it('a sandbox with credentials is refused without a certificate authority', async () => {
    const h = harness({ certificateAuthority: undefined });
    const error = await h.open(POLICY).catch((e: unknown) => e);
    expect(isSbxError(error, 'INVALID_ARGUMENT')).toBe(true);
  });

  it('offers only http/1.1 to the client when intercepting', async () => {
    const h = harness();
    const upstream = await httpsUpstream();
    const listener = await h.open(POLICY);
    const tls = await tlsThrough(portOf(listener), 'api.test', upstream.port, ['h2', 'http/1.1']);
    expect(tls.alpnProtocol).toBe('http/1.1');
    tls.destroy();
  });

  it('a client offering only h2 fails the handshake instead of getting frames nobody reads', async () => {
    const h = harness();
    const upstream = await httpsUpstream();
    const listener = await h.open(POLICY);
    const error = await tlsThrough(portOf(listener), 'api.test', upstream.port, ['h2']).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    await expect.poll(() => reasons(h.events)).toEqual(['CONNECT:deny:client-tls-failed']);
    expect(upstream.seen).toEqual([]);
  });

  it('a request head sent a few bytes per write is read whole, and the swap still happens', async () => {
    const h = harness();
    const upstream = await httpsUpstream();
    const listener = await h.open(POLICY);
    const placeholder = listener.placeholders[0]!.placeholder;
    const tls = await tlsThrough(portOf(listener), 'api.test', upstream.port);
    const request = `GET /slow HTTP/1.1\r\nHost: api.test:${upstream.port}\r\nAuthorization: Bearer ${placeholder}\r\nConnection: close\r\n\r\n`;
    const parts: string[] = [];
    for (let i = 0; i < request.length; i += 7) parts.push(request.slice(i, i + 7));
    expect(await converse(tls, parts)).toMatch(/^HTTP\/1\.1 200/);
    expect(upstream.seen[0]!.headers.authorization).toBe(`Bearer ${SECRET}`);
  });

  it('with interceptAllHosts off, only credential hosts are intercepted; others stay blind tunnels', async () => {
    const h = harness({ interceptAllHosts: false });
    const upstream = await httpsUpstream();
    const listener = await h.open(POLICY);
    const port = portOf(listener);
    // other.test: the sandbox sees the upstream's own certificate, not one of the gateway CA.
    const { socket } = await connectThrough(port, `other.test:${upstream.port}`);
    const blind = tlsConnect({ socket, servername: 'other.test', ca: upstreamCa.certificatePem });
    await new Promise<void>((resolve, reject) => {
      blind.once('secureConnect', resolve);
      blind.once('error', reject);
    });
    expect(blind.authorized).toBe(true);
    blind.destroy();
    // api.test: intercepted, the gateway CA's leaf.
    const tls = await tlsThrough(port, 'api.test', upstream.port);
    expect(tls.authorized).toBe(true);
    tls.destroy();
  });

  it('attack: an upstream echoing the secret in a header and a body hands the sandbox a masked copy', async () => {
    const h = harness();
    const seen: string[] = [];
    const server = createHttpsServer({
      SNICallback: (name, done) => {
        upstreamCa.secureContextFor(name).then(
          (context) => done(null, context),
          (error: Error) => done(error),
        );
      },
    });
    server.on('request', (req, res) => {
      const auth = req.headers.authorization ?? '';
      seen.push(`${req.method} ${req.url} ${req.headers['accept-encoding']}`);
      res.setHeader('x-echo', auth);
      if (req.url === '/chunked') {
        // Split inside the secret, in two chunks of the chunked encoding.
        res.write(`{"auth":"${auth.slice(0, 12)}`);
        res.end(`${auth.slice(12)}"}`);
      } else {
        res.end(`{"auth":"${auth}"}`);
      }
    });
    server.on('tlsClientError', () => {});
    const upstreamPort = await listening(server as unknown as Server);
    const listener = await h.open(POLICY);
    const placeholder = listener.placeholders[0]!.placeholder;
    const tls = await tlsThrough(portOf(listener), 'api.test', upstreamPort);
    const host = `api.test:${upstreamPort}`;
    const answer = await converse(tls, [
      `GET /plain HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${placeholder}\r\nAccept-Encoding: gzip\r\n\r\n`,
      `HEAD /head HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${placeholder}\r\n\r\n`,
      `GET /chunked HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${placeholder}\r\nConnection: close\r\n\r\n`,
    ]);
    expect(seen).toEqual(['GET /plain identity', 'HEAD /head identity', 'GET /chunked identity']);
    expect(answer.match(/HTTP\/1\.1 200/g)).toHaveLength(3);
    expect(answer).not.toContain(SECRET);
    const mask = '*'.repeat(SECRET.length);
    expect(answer).toContain(`x-echo: Bearer ${mask}`);
    expect(answer).toContain(`{"auth":"Bearer ${mask}"}`);
    // The chunked body still de-chunks to the masked text.
    const last = answer.lastIndexOf('HTTP/1.1 200');
    let rest = answer.slice(answer.indexOf('\r\n\r\n', last) + 4);
    let dechunked = '';
    for (;;) {
      const size = parseInt(rest.slice(0, rest.indexOf('\r\n')), 16);
      if (size === 0) break;
      rest = rest.slice(rest.indexOf('\r\n') + 2);
      dechunked += rest.slice(0, size);
      rest = rest.slice(size + 2);
    }
    expect(dechunked).toBe(`{"auth":"Bearer ${mask}"}`);
  });
});
