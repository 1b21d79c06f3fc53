import { webcrypto } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { connect as tlsConnect, createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { isSbxError } from '@sbx/core';
import { EgressCertificateAuthority } from './egress-certificate-authority.js';
import { loadX509 } from './x509-library.js';

const crypto = webcrypto;

/** Completes a TLS handshake to a server showing `ca`'s leaf for `host`; resolves the client. */
async function handshake(
  ca: EgressCertificateAuthority,
  host: string,
  trust: string,
): Promise<{ authorized: boolean; error?: Error; subjectaltname?: string }> {
  const server = createTlsServer({
    SNICallback: (name, done) => {
      ca.secureContextFor(name).then(
        (context) => done(null, context),
        (error: Error) => done(error),
      );
    },
  });
  server.on('secureConnection', (socket) => socket.end());
  server.on('tlsClientError', () => {});
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const client: TLSSocket = tlsConnect({
      host: '127.0.0.1',
      port: (server.address() as AddressInfo).port,
      servername: host,
      ca: trust,
    });
    const result = await new Promise<{ authorized: boolean; error?: Error }>((resolve) => {
      client.once('secureConnect', () => resolve({ authorized: client.authorized }));
      client.once('error', (error) => resolve({ authorized: false, error }));
    });
    const san = client.getPeerCertificate()?.subjectaltname;
    client.destroy();
    return { ...result, ...(san ? { subjectaltname: san } : {}) };
  } finally {
    server.close();
  }
}

describe('EgressCertificateAuthority', () => {
  it('issues a leaf for the host that a client trusting only the CA accepts', async () => {
    const ca = await EgressCertificateAuthority.generate();
    const result = await handshake(ca, 'api.example.test', ca.certificatePem);
    expect(result.error).toBeUndefined();
    expect(result.authorized).toBe(true);
    expect(result.subjectaltname).toBe('DNS:api.example.test');
  });

  it('a client trusting another CA refuses the leaf', async () => {
    const ca = await EgressCertificateAuthority.generate();
    const other = await EgressCertificateAuthority.generate();
    const result = await handshake(ca, 'api.example.test', other.certificatePem);
    expect(result.authorized).toBe(false);
  });

  it('never exposes the CA private key', async () => {
    const ca = await EgressCertificateAuthority.generate();
    const texts = [
      ca.certificatePem,
      JSON.stringify(ca),
      inspect(ca, { showHidden: true, depth: 10 }),
      String(Object.keys(ca)),
    ];
    for (const text of texts) expect(text).not.toMatch(/PRIVATE KEY/);
    expect(Object.keys(ca).sort()).toEqual(['certificatePem']);
  });

  it('keeps at most maxCachedLeaves leaves, least recently used dropped first', async () => {
    const ca = await EgressCertificateAuthority.generate({ maxCachedLeaves: 2 });
    const a = await ca.secureContextFor('a.test');
    await ca.secureContextFor('b.test');
    expect(await ca.secureContextFor('a.test')).toBe(a);
    await ca.secureContextFor('c.test');
    expect(ca.cachedLeaves).toBe(2);
    // b was least recently used; a stays cached.
    expect(await ca.secureContextFor('a.test')).toBe(a);
  });

  it('shares one issue between concurrent callers and reissues after half the lifetime', async () => {
    let now = Date.now();
    const ca = await EgressCertificateAuthority.generate({
      leafValidityMs: 3_600_000,
      now: () => now,
    });
    const [x, y] = await Promise.all([
      ca.secureContextFor('a.test'),
      ca.secureContextFor('a.test'),
    ]);
    expect(x).toBe(y);
    now += 1_900_000;
    expect(await ca.secureContextFor('a.test')).not.toBe(x);
  });

  it('loads a kept CA from PEM; refuses a key that is not its own, oversized PEM, a certificate that is no CA', async () => {
    const x509 = await loadX509();
    const make = async (ca = true) => {
      const keys = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
        'sign',
        'verify',
      ]);
      const cert = await x509.X509CertificateGenerator.createSelfSigned({
        name: 'CN=kept',
        keys,
        signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
        extensions: [new x509.BasicConstraintsExtension(ca, ca ? 0 : undefined, true)],
      });
      const pkcs8 = Buffer.from(await crypto.subtle.exportKey('pkcs8', keys.privateKey));
      return {
        certificate: cert.toString('pem'),
        privateKey: `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString('base64')}\n-----END PRIVATE KEY-----\n`,
      };
    };
    const kept = await make();
    const ca = await EgressCertificateAuthority.fromPem(kept);
    expect((await handshake(ca, 'kept.test', kept.certificate)).authorized).toBe(true);
    const other = await make();
    const error = await EgressCertificateAuthority.fromPem({
      certificate: kept.certificate,
      privateKey: other.privateKey,
    }).catch((e: unknown) => e);
    expect(isSbxError(error, 'INVALID_ARGUMENT')).toBe(true);
    const huge = await EgressCertificateAuthority.fromPem({
      certificate: kept.certificate + ' '.repeat(70_000),
      privateKey: kept.privateKey,
    }).catch((e: unknown) => e);
    expect(isSbxError(huge, 'INVALID_ARGUMENT')).toBe(true);
    // A certificate that is no CA would issue leaves no client accepts: refused at load.
    const notCa = await EgressCertificateAuthority.fromPem(await make(false)).catch(
      (e: unknown) => e,
    );
    expect(isSbxError(notCa, 'INVALID_ARGUMENT')).toBe(true);
  });
});
