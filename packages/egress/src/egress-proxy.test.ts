import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { parseNetworkPolicy, type NetworkPolicyInput } from '@sbx/core';
import { EgressProxy, type EgressProxyOptions } from './egress-proxy.js';
import type { EgressDecisionEvent } from './egress-events.js';

// Every connection of these tests goes to 127.0.0.1: test host names are mapped there by the
// proxy's injected resolver, and the one name mapped to the metadata address is refused before
// any connect (the guard under test).
const LOOPBACK = '127.0.0.1';
const RESOLVE: Record<string, string[]> = {
  'allowed.test': [LOOPBACK],
  'other.test': [LOOPBACK],
  'denied.test': [LOOPBACK],
  'approved.test': [LOOPBACK],
  'rebind.test': [LOOPBACK],
  'metadata.test': ['169.254.169.254'],
};

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Harness {
  proxy: EgressProxy;
  events: EgressDecisionEvent[];
  resolved: string[];
  /** Opens a listener for `sandboxId` and returns its port. */
  open(sandboxId: string, policy: NetworkPolicyInput): Promise<number>;
}

function harness(
  options: Omit<EgressProxyOptions, 'resolve'> & { loopbackAllowed?: boolean } = {},
): Harness {
  const resolved: string[] = [];
  const proxy = new EgressProxy({
    // The upstreams of these tests are on loopback; the rebinding tests run without this.
    allowPrivate: options.loopbackAllowed === false ? undefined : (a) => a === LOOPBACK,
    ...options,
    resolve: async (host) => {
      resolved.push(host);
      const addresses = RESOLVE[host];
      if (!addresses) throw new Error(`no test address for ${host}`);
      return addresses;
    },
  });
  const events: EgressDecisionEvent[] = [];
  proxy.onEvent((e) => events.push(e));
  cleanups.push(() => proxy.close());
  return {
    proxy,
    events,
    resolved,
    async open(sandboxId, policy) {
      const listener = await proxy.openSandbox({
        sandboxId,
        threadId: `thread-${sandboxId}`,
        policy: parseNetworkPolicy(policy),
        listen: { host: LOOPBACK, port: 0 },
      });
      const address = listener.address;
      if (!('port' in address)) throw new Error('expected a TCP listener');
      return address.port;
    },
  };
}

async function listening<T extends Server | HttpServer>(server: T): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, LOOPBACK, resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        (server as HttpServer).closeAllConnections?.();
        server.close(() => resolve());
      }),
  );
  return (server.address() as AddressInfo).port;
}

/** A TCP upstream recording the first bytes of each connection. */
async function tcpUpstream(): Promise<{ port: number; received: Buffer[] }> {
  const received: Buffer[] = [];
  const server = createServer((socket) => {
    socket.once('data', (chunk) => {
      received.push(chunk);
      socket.destroy();
    });
    socket.on('error', () => {});
  });
  return { port: await listening(server), received };
}

/** An HTTP upstream answering 200 `ok <path>` or what `handler` says. */
async function httpUpstream(
  handler?: (path: string) => { status: number; headers?: Record<string, string> },
): Promise<{ port: number; requests: string[] }> {
  const requests: string[] = [];
  const server = createHttpServer((req, res) => {
    requests.push(`${req.headers.host} ${req.url}`);
    const answer = handler?.(req.url ?? '') ?? { status: 200 };
    res.writeHead(answer.status, answer.headers);
    res.end(`ok ${req.url}`);
  });
  return { port: await listening(server), requests };
}

/** Sends `data` to the proxy and returns everything it answers until it closes. */
function exchange(port: number, data: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, LOOPBACK);
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.write(data);
  });
}

/** Sends CONNECT and resolves with the socket and the proxy's answer line. */
function connectTunnel(port: number, target: string): Promise<{ socket: Socket; status: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, LOOPBACK);
    let data = '';
    const onData = (c: Buffer) => {
      data += c.toString('latin1');
      const end = data.indexOf('\r\n\r\n');
      if (end === -1) return;
      socket.off('data', onData);
      resolve({ socket, status: data.slice(0, data.indexOf('\r\n')) });
    };
    socket.on('data', onData);
    socket.on('error', reject);
    socket.on('close', () => resolve({ socket, status: data.split('\r\n')[0] ?? '' }));
    socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
  });
}

const httpGet = (target: string, host: string) =>
  `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nUser-Agent: test\r\n\r\n`;

const reasons = (events: EgressDecisionEvent[]) => events.map((e) => `${e.verdict}:${e.reason}`);

/** Sends a TLS ClientHello naming `servername` through a tunnel; resolves when the tunnel ends. */
function helloThrough(socket: Socket, servername: string): Promise<void> {
  return new Promise((resolve) => {
    const tls = tlsConnect({ socket, servername, rejectUnauthorized: false });
    tls.on('error', () => resolve());
    socket.on('close', () => resolve());
  });
}

describe('EgressProxy: plain HTTP', () => {
  it('forwards an allowed request and records the decision with sandbox, thread, host and port', async () => {
    const up = await httpUpstream();
    const h = harness();
    const port = await h.open('sb-a', { mode: 'allowlist', allow: ['allowed.test'] });
    const answer = await exchange(
      port,
      httpGet(`http://allowed.test:${up.port}/x?y=1`, `allowed.test:${up.port}`),
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(answer).toContain('ok /x?y=1');
    expect(h.events).toEqual([
      {
        type: 'egress-decision',
        sandboxId: 'sb-a',
        threadId: 'thread-sb-a',
        method: 'HTTP',
        host: 'allowed.test',
        port: up.port,
        verdict: 'allow',
        reason: 'allowed',
      },
    ]);
  });

  it('attack: a Host header naming another host than the absolute URI is refused', async () => {
    const up = await httpUpstream();
    const h = harness();
    const port = await h.open('sb-a', { mode: 'allowlist', allow: ['allowed.test'] });
    const answer = await exchange(
      port,
      httpGet(`http://allowed.test:${up.port}/`, `denied.test:${up.port}`),
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    expect(reasons(h.events)).toEqual(['deny:host-mismatch']);
    expect(up.requests).toEqual([]);
  });

  it('attack: a redirect to a denied host is passed back, not followed; the followed request is refused', async () => {
    const up = await httpUpstream((path) =>
      path === '/start'
        ? { status: 302, headers: { location: 'http://denied.test/' } }
        : { status: 200 },
    );
    const h = harness();
    const port = await h.open('sb-a', { mode: 'allowlist', allow: ['allowed.test'] });
    const first = await exchange(
      port,
      httpGet(`http://allowed.test:${up.port}/start`, `allowed.test:${up.port}`),
    );
    expect(first).toMatch(/^HTTP\/1\.1 302/);
    const location = /location: (\S+)/i.exec(first)![1]!;
    const next = new URL(location);
    const second = await exchange(
      port,
      httpGet(`http://${next.host}:${up.port}/`, `${next.host}:${up.port}`),
    );
    expect(second).toMatch(/^HTTP\/1\.1 403/);
    expect(up.requests).toEqual([`allowed.test:${up.port} /start`]);
    expect(reasons(h.events)).toEqual(['allow:allowed', 'deny:not-allowed']);
  });

  it('attack: oversized headers are refused with 431 before anything is decided', async () => {
    const h = harness({ limits: { maxHeaderBytes: 16 * 1024 } });
    const port = await h.open('sb-a', { mode: 'open' });
    const big = `GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`;
    const answer = await exchange(port, big);
    expect(answer).toMatch(/^HTTP\/1\.1 431/);
    expect(h.resolved).toEqual([]);
    expect(reasons(h.events)).toEqual(['deny:header-too-large']);
  });

  it('attack: a slow client that never finishes its headers is closed at the header timeout', async () => {
    const h = harness({ limits: { headerTimeoutMs: 150 } });
    const port = await h.open('sb-a', { mode: 'open' });
    const answer = await exchange(port, 'GET http://allowed.test/ HTTP/1.1\r\nHost: allo');
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(reasons(h.events)).toEqual(['deny:header-timeout']);
  });
});

describe('EgressProxy: CONNECT', () => {
  it('attack: CONNECT to a denied host is refused without resolving it', async () => {
    const up = await tcpUpstream();
    const h = harness();
    const port = await h.open('sb-a', { mode: 'allowlist', allow: ['allowed.test'], deny: [] });
    const { status } = await connectTunnel(port, `denied.test:${up.port}`);
    expect(status).toMatch(/^HTTP\/1\.1 403/);
    expect(h.resolved).toEqual([]);
    expect(up.received).toEqual([]);
    expect(reasons(h.events)).toEqual(['deny:not-allowed']);
  });

  it('a deny rule wins over open mode', async () => {
    const h = harness();
    const port = await h.open('sb-a', { mode: 'open', deny: ['*.test'] });
    const { status } = await connectTunnel(port, 'allowed.test:443');
    expect(status).toMatch(/^HTTP\/1\.1 403/);
    expect(reasons(h.events)).toEqual(['deny:denied']);
  });

  it('tunnels TLS whose SNI is the CONNECT host', async () => {
    const up = await tcpUpstream();
    const h = harness();
    const port = await h.open('sb-a', { mode: 'allowlist', allow: ['allowed.test'] });
    const { socket, status } = await connectTunnel(port, `allowed.test:${up.port}`);
    expect(status).toBe('HTTP/1.1 200 Connection Established');
    await helloThrough(socket, 'allowed.test');
    expect(up.received).toHaveLength(1);
    expect(up.received[0]![0]).toBe(0x16);
    expect(reasons(h.events)).toEqual(['allow:allowed']);
  });

  it('attack: domain fronting (SNI of another host than the CONNECT host) is refused before the upstream connect', async () => {
    const up = await tcpUpstream();
    const h = harness();
    const port = await h.open('sb-a', { mode: 'allowlist', allow: ['allowed.test', 'other.test'] });
    const { socket } = await connectTunnel(port, `allowed.test:${up.port}`);
    await helloThrough(socket, 'other.test');
    expect(up.received).toEqual([]);
    expect(reasons(h.events)).toEqual(['deny:sni-mismatch']);
  });

  it('attack: a tunnel that sends no TLS is refused', async () => {
    const up = await tcpUpstream();
    const h = harness();
    const port = await h.open('sb-a', { mode: 'allowlist', allow: ['allowed.test'] });
    const { socket } = await connectTunnel(port, `allowed.test:${up.port}`);
    await new Promise<void>((resolve) => {
      socket.on('close', () => resolve());
      socket.write('GET / HTTP/1.1\r\nHost: other.test\r\n\r\n');
    });
    expect(up.received).toEqual([]);
    expect(reasons(h.events)).toEqual(['deny:not-tls']);
  });

  // 127.0.0.1 spelled as resolvers and inet_aton read it; built at run time from its number.
  const loopbackSpellings = (() => {
    const n = 127 * 2 ** 24 + 1;
    return [
      ['decimal', String(n)],
      ['octal', '0177.0.0.01'],
      ['hex', `0x${n.toString(16)}`],
      ['short', '127.1'],
      ['IPv6 loopback', '[::1]'],
      ['IPv4-mapped IPv6', '[::ffff:127.0.0.1]'],
      ['IPv4-mapped IPv6, hex', '[::ffff:7f00:1]'],
    ] as const;
  })();
  for (const [label, literal] of loopbackSpellings) {
    it(`attack: CONNECT to the IP literal ${literal} (${label}) is refused as loopback`, async () => {
      const h = harness({ loopbackAllowed: false });
      const port = await h.open('sb-a', { mode: 'open' });
      const { status } = await connectTunnel(port, `${literal}:443`);
      expect(status).toMatch(/^HTTP\/1\.1 403/);
      expect(reasons(h.events)).toEqual(['deny:blocked-address:loopback']);
    });
  }

  it('attack: an IP literal is never on an allow list of names', async () => {
    const h = harness();
    const port = await h.open('sb-a', { mode: 'allowlist', allow: ['allowed.test'] });
    const { status } = await connectTunnel(port, '8.8.8.8:443');
    expect(status).toMatch(/^HTTP\/1\.1 403/);
    expect(reasons(h.events)).toEqual(['deny:ip-literal']);
  });

  it('attack: an allowed name resolving to 127.0.0.1 (DNS rebinding) is refused before any connect', async () => {
    const up = await tcpUpstream();
    const h = harness({ loopbackAllowed: false });
    const port = await h.open('sb-a', { mode: 'allowlist', allow: ['rebind.test'] });
    const { status } = await connectTunnel(port, `rebind.test:${up.port}`);
    expect(status).toMatch(/^HTTP\/1\.1 403/);
    expect(h.resolved).toEqual(['rebind.test']);
    expect(up.received).toEqual([]);
    expect(reasons(h.events)).toEqual(['deny:blocked-address:loopback']);
  });

  it('attack: an allowed name resolving to the metadata address 169.254.169.254 is refused before any connect', async () => {
    const h = harness({ loopbackAllowed: false });
    const port = await h.open('sb-a', { mode: 'allowlist', allow: ['metadata.test'] });
    const { status } = await connectTunnel(port, 'metadata.test:80');
    expect(status).toMatch(/^HTTP\/1\.1 403/);
    expect(reasons(h.events)).toEqual(['deny:blocked-address:link-local']);
  });
});

describe('EgressProxy: timeouts', () => {
  it('attack: a tunnel whose client never sends its ClientHello is closed at the handshake timeout', async () => {
    const up = await tcpUpstream();
    const h = harness({ limits: { headerTimeoutMs: 150 } });
    const port = await h.open('sb-a', { mode: 'allowlist', allow: ['allowed.test'] });
    const { socket, status } = await connectTunnel(port, `allowed.test:${up.port}`);
    expect(status).toBe('HTTP/1.1 200 Connection Established');
    await new Promise<void>((resolve) => socket.on('close', () => resolve()));
    expect(up.received).toEqual([]);
    expect(reasons(h.events)).toEqual(['deny:header-timeout']);
  });

  it('an established tunnel without bytes either way is closed at the idle timeout', async () => {
    let upstreamClosed!: () => void;
    const closed = new Promise<void>((resolve) => (upstreamClosed = resolve));
    const silent = createServer((socket) => {
      socket.on('error', () => {});
      socket.on('close', () => upstreamClosed());
      socket.resume();
    });
    const upPort = await listening(silent);
    const h = harness({ limits: { idleTimeoutMs: 150 } });
    const port = await h.open('sb-a', { mode: 'allowlist', allow: ['allowed.test'] });
    const { socket } = await connectTunnel(port, `allowed.test:${upPort}`);
    // Resolves when the proxy closes the tunnel: the upstream never answers the hello.
    await helloThrough(socket, 'allowed.test');
    await closed;
    expect(reasons(h.events)).toEqual(['allow:allowed']);
  });
});

describe('EgressProxy: bounds per sandbox', () => {
  it("attack: 1,000 concurrent connections from one sandbox leave another sandbox's request working", async () => {
    const up = await httpUpstream();
    const h = harness({ limits: { maxConnectionsPerSandbox: 64 } });
    const noisy = await h.open('sb-noisy', { mode: 'open' });
    const quiet = await h.open('sb-quiet', { mode: 'allowlist', allow: ['allowed.test'] });
    const flood: Socket[] = [];
    await Promise.all(
      Array.from(
        { length: 1000 },
        () =>
          new Promise<void>((resolve) => {
            const socket = connect(noisy, LOOPBACK);
            flood.push(socket);
            socket.on('error', () => resolve());
            socket.once('connect', () => resolve());
          }),
      ),
    );
    cleanups.push(() => flood.forEach((s) => s.destroy()));
    const answer = await exchange(
      quiet,
      httpGet(`http://allowed.test:${up.port}/`, `allowed.test:${up.port}`),
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    const limited = h.events.filter(
      (e) => e.sandboxId === 'sb-noisy' && e.reason === 'connection-limit',
    );
    expect(limited.length).toBeGreaterThan(0);
  }, 60_000);
});

describe('EgressProxy: onEgressRequest', () => {
  it('a host approved at run time is reachable for the rest of the sandbox, asked once', async () => {
    const up = await httpUpstream();
    const asked: string[] = [];
    const h = harness({
      onEgressRequest: async (r) => {
        asked.push(`${r.sandboxId} ${r.threadId} ${r.host}:${r.port}`);
        return r.host === 'approved.test';
      },
    });
    const port = await h.open('sb-a', { mode: 'allowlist', allow: ['allowed.test'] });
    const get = () =>
      exchange(port, httpGet(`http://approved.test:${up.port}/`, `approved.test:${up.port}`));
    expect(await get()).toMatch(/^HTTP\/1\.1 200/);
    expect(await get()).toMatch(/^HTTP\/1\.1 200/);
    expect(asked).toEqual([`sb-a thread-sb-a approved.test:${up.port}`]);
    expect(reasons(h.events)).toEqual(['allow:approved', 'allow:approved']);
    const refused = await exchange(
      port,
      httpGet(`http://denied.test:${up.port}/`, `denied.test:${up.port}`),
    );
    expect(refused).toMatch(/^HTTP\/1\.1 403/);
  });

  it('attack: a hook that throws or never answers denies (fail closed); a deny rule is never offered', async () => {
    const up = await httpUpstream();
    let asked = 0;
    const h = harness({
      limits: { approvalTimeoutMs: 100 },
      onEgressRequest: (r) => {
        asked += 1;
        if (r.host === 'other.test') throw new Error('hook failed');
        return new Promise<boolean>(() => {});
      },
    });
    const port = await h.open('sb-a', {
      mode: 'allowlist',
      allow: ['allowed.test'],
      deny: ['denied.test'],
    });
    for (const host of ['approved.test', 'other.test', 'denied.test']) {
      const answer = await exchange(
        port,
        httpGet(`http://${host}:${up.port}/`, `${host}:${up.port}`),
      );
      expect(answer).toMatch(/^HTTP\/1\.1 403/);
    }
    expect(asked).toBe(2);
    expect(up.requests).toEqual([]);
  });
});
