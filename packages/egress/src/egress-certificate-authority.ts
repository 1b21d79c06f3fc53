/**
 * The certificate authority of one gateway's egress proxy: the certificate a sandbox trusts so the
 * proxy can terminate its TLS to a brokered host, and the short-lived leaf certificates it shows
 * there. Node cannot sign X.509 itself; `@peculiar/x509` builds the certificates on WebCrypto
 * (pure TypeScript, no native code), so every signature runs in WebCrypto's thread pool, off the
 * event loop.
 *
 * The CA private key lives in a private field as a non-extractable `CryptoKey`: nothing this class
 * returns, logs or serialises contains it, and WebCrypto itself refuses to export it.
 */
import { webcrypto, X509Certificate as NodeX509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { createSecureContext, type SecureContext } from 'node:tls';
import type * as x509 from '@peculiar/x509';
import { InvalidArgumentError } from '@sbx/core';
import { loadX509, type X509Library } from './x509-library.js';

const crypto = webcrypto;
type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;
const ECDSA_KEY = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING = { name: 'ECDSA', hash: 'SHA-256' } as const;
const HOUR = 3_600_000;

/** Largest PEM text accepted for a loaded CA (a P-256 certificate and key are well under 2 KiB). */
export const MAX_CA_PEM_BYTES = 64 * 1024;

export interface EgressCertificateAuthorityOptions {
  /** Leaf certificates kept (one per host), least recently used dropped first. Default 1024. */
  readonly maxCachedLeaves?: number;
  /** Lifetime of a leaf certificate; one is reissued once half of it has passed. Default 24 h. */
  readonly leafValidityMs?: number;
  /** Milliseconds since the epoch; injectable for tests. Default `Date.now`. */
  readonly now?: () => number;
}

/** A CA the host application keeps across restarts, so sandboxes keep trusting the same one. */
export interface EgressCaPem {
  /** The CA certificate (PEM); it must be a CA (basicConstraints cA) with an ECDSA P-256 key. */
  readonly certificate: string;
  /** Its PKCS#8 private key (PEM, `-----BEGIN PRIVATE KEY-----`). */
  readonly privateKey: string;
}

interface Leaf {
  readonly context: SecureContext;
  /** When it is reissued: half its lifetime. */
  readonly renewAt: number;
}

function pemBody(pem: string, label: string, what: string): Uint8Array {
  const match = new RegExp(
    `^\\s*-----BEGIN ${label}-----\\s*([A-Za-z0-9+/=\\s]+?)\\s*-----END ${label}-----\\s*$`,
  ).exec(pem);
  if (!match) throw new InvalidArgumentError(`egress CA: ${what} is not one PEM ${label}`);
  return new Uint8Array(Buffer.from(match[1]!.replace(/\s+/g, ''), 'base64'));
}

export class EgressCertificateAuthority {
  /** The CA certificate (PEM): what a sandbox must trust. Never the key. */
  readonly certificatePem: string;
  readonly #x509: X509Library;
  readonly #certificate: x509.X509Certificate;
  readonly #signingKey: CryptoKey;
  /** One key for every leaf: generating a key per host would put a key generation on each miss. */
  readonly #leafKeys: CryptoKeyPair;
  readonly #leafKeyPem: string;
  readonly #leaves = new Map<string, Promise<Leaf>>();
  readonly #maxLeaves: number;
  readonly #leafValidityMs: number;
  readonly #now: () => number;

  private constructor(
    x509: X509Library,
    certificate: x509.X509Certificate,
    signingKey: CryptoKey,
    leafKeys: CryptoKeyPair,
    leafKeyPem: string,
    options: EgressCertificateAuthorityOptions,
  ) {
    this.#x509 = x509;
    this.#certificate = certificate;
    this.certificatePem = certificate.toString('pem') + '\n';
    this.#signingKey = signingKey;
    this.#leafKeys = leafKeys;
    this.#leafKeyPem = leafKeyPem;
    this.#maxLeaves = options.maxCachedLeaves ?? 1024;
    this.#leafValidityMs = options.leafValidityMs ?? 24 * HOUR;
    this.#now = options.now ?? Date.now;
    if (!Number.isInteger(this.#maxLeaves) || this.#maxLeaves < 1) {
      throw new InvalidArgumentError('egress CA: maxCachedLeaves must be a positive integer');
    }
    if (!(this.#leafValidityMs >= 60_000)) {
      throw new InvalidArgumentError('egress CA: leafValidityMs must be at least one minute');
    }
  }

  /** A new CA for this gateway (valid one year), with a key that exists in this process only. */
  static async generate(
    options: EgressCertificateAuthorityOptions = {},
  ): Promise<EgressCertificateAuthority> {
    const x509 = await loadX509();
    const now = (options.now ?? Date.now)();
    const keys = await crypto.subtle.generateKey(ECDSA_KEY, false, ['sign', 'verify']);
    const name = `CN=sbx egress CA ${Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString('hex')}`;
    const certificate = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: randomSerial(),
      name,
      notBefore: new Date(now - HOUR),
      notAfter: new Date(now + 365 * 24 * HOUR),
      signingAlgorithm: SIGNING,
      keys,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
          true,
        ),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    return EgressCertificateAuthority.#withLeafKey(x509, certificate, keys.privateKey, options);
  }

  /** The CA the host application kept (see `EgressCaPem`); checked before it signs anything. */
  static async fromPem(
    pem: EgressCaPem,
    options: EgressCertificateAuthorityOptions = {},
  ): Promise<EgressCertificateAuthority> {
    const x509 = await loadX509();
    if (typeof pem?.certificate !== 'string' || typeof pem.privateKey !== 'string') {
      throw new InvalidArgumentError('egress CA: certificate and privateKey must be PEM strings');
    }
    if (pem.certificate.length + pem.privateKey.length > MAX_CA_PEM_BYTES) {
      throw new InvalidArgumentError(`egress CA: PEM text over ${MAX_CA_PEM_BYTES} bytes`);
    }
    const der = pemBody(pem.certificate, 'CERTIFICATE', 'certificate');
    let certificate: x509.X509Certificate;
    try {
      certificate = new x509.X509Certificate(der);
    } catch (cause) {
      throw new InvalidArgumentError('egress CA: certificate does not parse', { cause });
    }
    const constraints = certificate.getExtension(x509.BasicConstraintsExtension);
    if (!constraints?.ca) throw new InvalidArgumentError('egress CA: certificate is not a CA');
    let signingKey: CryptoKey;
    try {
      signingKey = await crypto.subtle.importKey(
        'pkcs8',
        pemBody(pem.privateKey, 'PRIVATE KEY', 'privateKey'),
        ECDSA_KEY,
        false,
        ['sign'],
      );
    } catch (cause) {
      if (cause instanceof InvalidArgumentError) throw cause;
      throw new InvalidArgumentError('egress CA: privateKey is not an ECDSA P-256 PKCS#8 key', {
        cause,
      });
    }
    // A key that is not the certificate's would issue leaves no sandbox can verify: refused here.
    const probe = new Uint8Array(32);
    const signature = await crypto.subtle.sign(SIGNING, signingKey, probe);
    const publicKey = await certificate.publicKey.export(ECDSA_KEY, ['verify'], crypto);
    if (!(await crypto.subtle.verify(SIGNING, publicKey, signature, probe))) {
      throw new InvalidArgumentError('egress CA: privateKey is not the key of certificate');
    }
    return EgressCertificateAuthority.#withLeafKey(x509, certificate, signingKey, options);
  }

  static async #withLeafKey(
    x509: X509Library,
    certificate: x509.X509Certificate,
    signingKey: CryptoKey,
    options: EgressCertificateAuthorityOptions,
  ): Promise<EgressCertificateAuthority> {
    const leafKeys = await crypto.subtle.generateKey(ECDSA_KEY, true, ['sign', 'verify']);
    const pkcs8 = Buffer.from(await crypto.subtle.exportKey('pkcs8', leafKeys.privateKey));
    const leafKeyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString('base64')}\n-----END PRIVATE KEY-----\n`;
    return new EgressCertificateAuthority(
      x509,
      certificate,
      signingKey,
      leafKeys,
      leafKeyPem,
      options,
    );
  }

  /** Leaves cached now (at most `maxCachedLeaves`). */
  get cachedLeaves(): number {
    return this.#leaves.size;
  }

  /**
   * A TLS context presenting a leaf for `host` (a domain name or an IP address), signed by this
   * CA: from the cache, or issued now (concurrent callers for one host share one issue).
   */
  async secureContextFor(host: string): Promise<SecureContext> {
    const cached = this.#leaves.get(host);
    if (cached) {
      this.#leaves.delete(host);
      this.#leaves.set(host, cached);
      const leaf = await cached.catch(() => undefined);
      if (leaf && leaf.renewAt > this.#now()) return leaf.context;
      if (this.#leaves.get(host) === cached) this.#leaves.delete(host);
    }
    const issued = this.#issue(host);
    this.#leaves.set(host, issued);
    while (this.#leaves.size > this.#maxLeaves) {
      this.#leaves.delete(this.#leaves.keys().next().value!);
    }
    issued.catch(() => {
      if (this.#leaves.get(host) === issued) this.#leaves.delete(host);
    });
    return (await issued).context;
  }

  async #issue(host: string): Promise<Leaf> {
    const x509 = this.#x509;
    const now = this.#now();
    const notAfter = Math.min(now + this.#leafValidityMs, this.#certificate.notAfter.getTime());
    const name = isIP(host)
      ? { type: 'ip' as const, value: host }
      : { type: 'dns' as const, value: host };
    const certificate = await x509.X509CertificateGenerator.create({
      serialNumber: randomSerial(),
      subject: [{ CN: [isIP(host) ? 'sbx egress' : host] }],
      issuer: this.#certificate.subject,
      notBefore: new Date(now - HOUR),
      notAfter: new Date(notAfter),
      signingAlgorithm: SIGNING,
      publicKey: this.#leafKeys.publicKey,
      signingKey: this.#signingKey,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([name]),
        await x509.AuthorityKeyIdentifierExtension.create(this.#certificate),
      ],
    });
    const pem = certificate.toString('pem');
    // Parsed once by Node itself: a certificate Node would not present fails here, not mid-handshake.
    new NodeX509Certificate(pem);
    const context = createSecureContext({ key: this.#leafKeyPem, cert: pem });
    return { context, renewAt: now + (notAfter - now) / 2 };
  }

  toJSON(): { certificatePem: string } {
    return { certificatePem: this.certificatePem };
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `EgressCertificateAuthority { ${this.#certificate.subject} }`;
  }
}

function randomSerial(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] = bytes[0]! & 0x7f; // a positive INTEGER
  return Buffer.from(bytes).toString('hex');
}
