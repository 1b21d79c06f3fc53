import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { parseClientHello } from './tls-client-hello.js';

/** A real ClientHello from Node's TLS client, captured by a loopback TCP server. */
async function realHello(servername: string): Promise<Buffer> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const captured = new Promise<Buffer>((resolve) =>
    server.once('connection', (socket) => {
      let data = Buffer.alloc(0);
      socket.on('data', (c: Buffer) => {
        data = Buffer.concat([data, c]);
        if (data.length >= 5 && data.length >= 5 + data.readUInt16BE(3)) {
          resolve(data);
          socket.destroy();
        }
      });
    }),
  );
  const { port } = server.address() as AddressInfo;
  const client = tlsConnect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false });
  client.on('error', () => {});
  const hello = await captured;
  client.destroy();
  server.close();
  return hello;
}

describe('parseClientHello', () => {
  it('reads the server name of a real hello, and asks for more on every prefix of it', async () => {
    const hello = await realHello('api.example.test');
    expect(parseClientHello(hello)).toEqual({ kind: 'hello', serverName: 'api.example.test' });
    for (let n = 0; n < hello.length; n += 1) {
      expect(parseClientHello(hello.subarray(0, n)).kind).toBe('incomplete');
    }
  });

  it('attack: corrupted lengths are refused, never read past the buffer', async () => {
    const hello = await realHello('api.example.test');
    for (let i = 5; i < Math.min(hello.length, 200); i += 1) {
      const bad = Buffer.from(hello);
      bad[i] = 0xff;
      const result = parseClientHello(bad);
      expect(['hello', 'invalid']).toContain(result.kind);
    }
  });

  it('refuses what is not TLS', () => {
    expect(parseClientHello(Buffer.from('GET / HTTP/1.1\r\n'))).toEqual({
      kind: 'invalid',
      reason: 'not-tls',
    });
  });
});
