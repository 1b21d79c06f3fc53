import { describe, expect, it } from 'vitest';
import { runIsolated } from '@sbx/core/testing';

// Catastrophic cases of the brokering relay, each in a child process with a time and memory
// limit: a regression to quadratic scanning or unbounded buffering fails here instead of hanging
// or exhausting the test runner (the heap limit bounds copies kept as strings; Buffers are outside
// it, so time is the bound for them). Loopback only, test CAs, test names mapped by the resolver.
const SCRIPT = (body: string) => `
import { createServer } from 'node:https';
import { connect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { parseNetworkPolicy } from '@sbx/core';
import { EgressCertificateAuthority, EgressProxy } from '@sbx/egress';

const [gatewayCa, upstreamCa] = await Promise.all([
  EgressCertificateAuthority.generate(),
  EgressCertificateAuthority.generate(),
]);
let received = 0;
const upstream = createServer(
  { SNICallback: (n, done) => upstreamCa.secureContextFor(n).then((c) => done(null, c), done) },
  (req, res) => {
    req.on('data', (c) => (received += c.length));
    req.on('end', () => res.end('ok'));
  },
);
await new Promise((r) => upstream.listen(0, '127.0.0.1', r));
const port = upstream.address().port;
const proxy = new EgressProxy({
  resolve: async () => ['127.0.0.1'],
  allowPrivate: (a) => a === '127.0.0.1',
  certificateAuthority: gatewayCa,
  upstreamCa: [upstreamCa.certificatePem],
  secretEnv: { TOKEN: 'secret-value' },
});
const listener = await proxy.openSandbox({
  sandboxId: 'hostile',
  policy: parseNetworkPolicy({
    mode: 'allowlist',
    allow: ['api.test'],
    credentials: [{ host: 'api.test', header: 'authorization', source: { kind: 'env', name: 'TOKEN' } }],
  }),
  listen: { host: '127.0.0.1', port: 0 },
});
const socket = connect(listener.address.port, '127.0.0.1');
await new Promise((r) => socket.once('data', r).write('CONNECT api.test:' + port + ' HTTP/1.1\\r\\nHost: api.test:' + port + '\\r\\n\\r\\n'));
const tls = tlsConnect({ socket, servername: 'api.test', ca: gatewayCa.certificatePem });
await new Promise((r) => tls.once('secureConnect', r));
const answer = [];
tls.on('data', (c) => answer.push(c));
const closed = new Promise((r) => tls.on('close', r));
const send = async (chunk) => {
  if (!tls.write(chunk)) await new Promise((r) => tls.once('drain', r));
};
${body}
await closed;
console.log(JSON.stringify({ received, status: Buffer.concat(answer).toString('latin1').split('\\r\\n')[0] }));
await proxy.close();
upstream.close();
`;

describe('credential brokering, catastrophic inputs', () => {
  it('attack: 64 MiB of near-miss placeholder prefixes is scanned in linear time', async () => {
    const result = await runIsolated({
      timeoutMs: 100_000,
      maxOldSpaceMb: 128,
      cwd: process.cwd(),
      script: SCRIPT(`
        const size = 64 * 1024 * 1024;
        await send('POST / HTTP/1.1\\r\\nHost: api.test:' + port + '\\r\\nContent-Length: ' + size + '\\r\\nConnection: close\\r\\n\\r\\n');
        // "sbx-placeholder" and one wrong byte, over and over: every position a near match.
        const block = Buffer.alloc(64 * 1024, 'sbx-placeholder_');
        for (let sent = 0; sent < size; sent += block.length) await send(block);
      `),
    });
    expect(result.timedOut, result.stderr).toBe(false);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      received: 64 * 1024 * 1024,
      status: 'HTTP/1.1 200 OK',
    });
  });

  it('attack: a chunked body of 100,000 one-byte chunks is relayed in linear time', async () => {
    const result = await runIsolated({
      timeoutMs: 100_000,
      maxOldSpaceMb: 128,
      cwd: process.cwd(),
      script: SCRIPT(`
        await send('POST / HTTP/1.1\\r\\nHost: api.test:' + port + '\\r\\nTransfer-Encoding: chunked\\r\\nConnection: close\\r\\n\\r\\n');
        await send(Buffer.from('1\\r\\nx\\r\\n'.repeat(100_000) + '0\\r\\n\\r\\n'));
      `),
    });
    expect(result.timedOut, result.stderr).toBe(false);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ received: 100_000, status: 'HTTP/1.1 200 OK' });
  });
});
