import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { isSbxError, silentLogger, type EgressAttachment } from '@sbx/core';
import { afterEach, describe, expect, it } from 'vitest';
import {
  EGRESS_PROXY_PORT,
  EGRESS_SOCKET_PATH,
  MAX_EGRESS_CA_BYTES,
  egressEnv,
  openNamespaceEgress,
} from './namespace-egress.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A unix socket listening in a fresh directory, and an attachment of it that counts closes. */
async function attachmentOf(extra: Partial<EgressAttachment> = {}) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sbx-nse-'));
  const socketPath = path.join(dir, 's.sock');
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  cleanups.push(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  });
  const closes = { count: 0 };
  const attachment: EgressAttachment = {
    socketPath,
    env: {},
    close: async () => {
      closes.count += 1;
    },
    ...extra,
  };
  return { attachment, closes, dir };
}

describe('openNamespaceEgress', () => {
  it('binds the socket and the forwarder node read-only, and starts the forwarder on the proxy port', async () => {
    const { attachment, closes } = await attachmentOf();
    const egress = await openNamespaceEgress(async () => attachment, 10, silentLogger);
    expect(egress.args).toEqual([
      '--ro-bind-fd',
      '10',
      EGRESS_SOCKET_PATH,
      '--ro-bind-fd',
      '11',
      expect.stringMatching(/^\/run\/sbx-egress\//),
    ]);
    expect(egress.companion.slice(-2)).toEqual([String(EGRESS_PROXY_PORT), EGRESS_SOCKET_PATH]);
    expect(egress.env.HTTPS_PROXY).toBe(`http://127.0.0.1:${EGRESS_PROXY_PORT}`);
    expect(egress.env.SSL_CERT_FILE).toBeUndefined();
    await Promise.all(egress.handles.map((h) => h.close()));
    await egress.release();
    expect(closes.count).toBe(1);
  });

  it('attack: a socket path that names a regular file (or a link to one) is refused, and the attachment closed', async () => {
    const { attachment, closes, dir } = await attachmentOf();
    const file = path.join(dir, 'not-a-socket');
    await writeFile(file, 'x');
    const link = path.join(dir, 'link-to-socket');
    await symlink(attachment.socketPath, link);
    for (const socketPath of [file, link]) {
      const error = await openNamespaceEgress(
        async () => ({ ...attachment, socketPath }),
        10,
        silentLogger,
      ).catch((e: unknown) => e);
      expect(isSbxError(error) && error.code).toBe('CONFINEMENT_START_FAILED');
    }
    expect(closes.count).toBe(2);
  });

  it('attack: an oversized CA is refused before anything is written, and the attachment closed', async () => {
    const { attachment, closes } = await attachmentOf({
      caCertificatePem: 'A'.repeat(MAX_EGRESS_CA_BYTES + 1),
    });
    const error = await openNamespaceEgress(async () => attachment, 10, silentLogger).catch(
      (e: unknown) => e,
    );
    expect(isSbxError(error) && error.code).toBe('INVALID_ARGUMENT');
    expect(closes.count).toBe(1);
  });

  it('with a CA: a read-only bundle from a descriptor, and the trust variables point at it', async () => {
    const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----';
    const { attachment } = await attachmentOf({ caCertificatePem: pem, env: { TOKEN: 'sbx-ph' } });
    const egress = await openNamespaceEgress(async () => attachment, 10, silentLogger);
    expect(egress.args.slice(-3)).toEqual([
      '--ro-bind-data',
      '12',
      expect.stringMatching(/^\/run\/sbx-egress\//),
    ]);
    const bundle = egress.handles[2]!;
    expect((await bundle.readFile('utf8')).startsWith(pem)).toBe(true);
    for (const name of [
      'SSL_CERT_FILE',
      'NODE_EXTRA_CA_CERTS',
      'REQUESTS_CA_BUNDLE',
      'CURL_CA_BUNDLE',
    ]) {
      expect(egress.env[name]).toBe(egress.args.at(-1));
    }
    expect(egress.env.TOKEN).toBe('sbx-ph');
    await Promise.all(egress.handles.map((h) => h.close()));
  });

  it('the proxy variables win over an attachment variable of the same name', () => {
    const env = egressEnv({ env: { HTTP_PROXY: 'http://elsewhere:1' } });
    expect(env.HTTP_PROXY).toBe(`http://127.0.0.1:${EGRESS_PROXY_PORT}`);
    expect(env.NO_PROXY).toBe('localhost,127.0.0.1,::1');
  });
});
