import { constants } from 'node:fs';
import { mkdtemp, open, readFile, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { InvalidArgumentError, type EgressAttachment, type Logger } from '@sbx/core';
import { ConfinementStartError } from './confinement-errors.js';
import { EGRESS_FORWARDER_SCRIPT } from './egress-forwarder-script.js';

/** Where the egress plumbing appears inside the namespace (read-only). */
export const EGRESS_RUN_DIR = '/run/sbx-egress';
export const EGRESS_SOCKET_PATH = `${EGRESS_RUN_DIR}/proxy.sock`;
const FORWARDER_NODE_PATH = `${EGRESS_RUN_DIR}/node`;
const CA_BUNDLE_PATH = `${EGRESS_RUN_DIR}/ca-bundle.pem`;
/** The namespace's loopback port of the forwarder, where `HTTP_PROXY` points. */
export const EGRESS_PROXY_PORT = 3128;
/** A gateway CA larger than this is refused before it is written anywhere. */
export const MAX_EGRESS_CA_BYTES = 64 * 1024;
/** The host's bundle the gateway CA is added to: brokered hosts aside, TLS is end to end. */
const SYSTEM_CA_BUNDLES = [
  '/etc/ssl/certs/ca-certificates.crt',
  '/etc/pki/tls/certs/ca-bundle.crt',
];
const MAX_SYSTEM_BUNDLE_BYTES = 4 * 1024 * 1024;
/** Linux's O_PATH (absent from `fs.constants`): a socket cannot be opened for reading. */
const O_PATH = 0o10000000;

/** The namespace's share of one egress attachment: what to bind, run and set. */
export interface NamespaceEgress {
  /** Opened host files, handed to bubblewrap from `firstFd` on; closed once it started. */
  readonly handles: readonly FileHandle[];
  /** bubblewrap arguments binding them (before the root is remounted read-only). */
  readonly args: readonly string[];
  /** The forwarder, started with the namespace's init. */
  readonly companion: readonly string[];
  /** What every command of the namespace gets on top of its environment. */
  readonly env: Readonly<Record<string, string>>;
  /** Closes the attachment (the namespace ended). */
  release(): Promise<void>;
}

/** The variables of a namespace whose way out is the forwarder (and, with a CA, its bundle). */
export function egressEnv(attachment: Pick<EgressAttachment, 'env' | 'caCertificatePem'>) {
  const proxy = `http://127.0.0.1:${EGRESS_PROXY_PORT}`;
  // Loopback is the sandbox's own; the proxy would refuse it anyway.
  const noProxy = 'localhost,127.0.0.1,::1';
  const env: Record<string, string> = {
    ...attachment.env,
    HTTP_PROXY: proxy,
    HTTPS_PROXY: proxy,
    http_proxy: proxy,
    https_proxy: proxy,
    ALL_PROXY: proxy,
    all_proxy: proxy,
    NO_PROXY: noProxy,
    no_proxy: noProxy,
  };
  if (attachment.caCertificatePem !== undefined) {
    for (const name of [
      'SSL_CERT_FILE',
      'NODE_EXTRA_CA_CERTS',
      'REQUESTS_CA_BUNDLE',
      'CURL_CA_BUNDLE',
    ]) {
      env[name] = CA_BUNDLE_PATH;
    }
  }
  return env;
}

/**
 * Opens `attach()`'s attachment and prepares its plumbing for one start of a namespace: the
 * socket bound at `EGRESS_SOCKET_PATH` (by descriptor: what is bound is the socket the gateway
 * made, not whatever a path names by then), the gateway's node binary at `FORWARDER_NODE_PATH`
 * for the forwarder, and, when the gateway brokers credentials, its CA with the host's bundle as a
 * read-only file (copied by bubblewrap from a descriptor, so no host path of it exists). On any
 * failure the attachment is closed again.
 */
export async function openNamespaceEgress(
  attach: () => Promise<EgressAttachment>,
  firstFd: number,
  logger: Logger,
): Promise<NamespaceEgress> {
  const attachment = await attach();
  const handles: FileHandle[] = [];
  try {
    const pem = attachment.caCertificatePem;
    if (pem !== undefined && Buffer.byteLength(pem) > MAX_EGRESS_CA_BYTES) {
      throw new InvalidArgumentError(
        `The egress gateway's CA is over ${MAX_EGRESS_CA_BYTES} bytes; refused`,
      );
    }
    const socket = await open(attachment.socketPath, O_PATH | constants.O_NOFOLLOW);
    handles.push(socket);
    if (!(await socket.stat()).isSocket()) {
      throw new ConfinementStartError('The egress gateway socket is not a socket', {
        details: { socketPath: attachment.socketPath },
      });
    }
    handles.push(await open(process.execPath, constants.O_RDONLY));
    const args = [
      '--ro-bind-fd',
      String(firstFd),
      EGRESS_SOCKET_PATH,
      '--ro-bind-fd',
      String(firstFd + 1),
      FORWARDER_NODE_PATH,
    ];
    if (pem !== undefined) {
      handles.push(await caBundleHandle(pem));
      args.push('--ro-bind-data', String(firstFd + 2), CA_BUNDLE_PATH);
    }
    return {
      handles,
      args,
      companion: [
        FORWARDER_NODE_PATH,
        // A relay holds a few buffers per connection: its heap stays small, and is held there.
        '--max-old-space-size=32',
        '-e',
        EGRESS_FORWARDER_SCRIPT,
        String(EGRESS_PROXY_PORT),
        EGRESS_SOCKET_PATH,
      ],
      env: egressEnv(attachment),
      release: () => attachment.close(),
    };
  } catch (error) {
    await Promise.all(handles.map((h) => h.close().catch(() => undefined)));
    await attachment
      .close()
      .catch((closeError: unknown) =>
        logger.error('An egress attachment could not be closed', { error: closeError }),
      );
    throw error;
  }
}

/** An unlinked file of the gateway CA followed by the host's bundle, open for reading. */
async function caBundleHandle(pem: string): Promise<FileHandle> {
  let system = '';
  for (const bundle of SYSTEM_CA_BUNDLES) {
    try {
      const text = await readFile(bundle, 'utf8');
      if (text.length <= MAX_SYSTEM_BUNDLE_BYTES) system = text;
      break;
    } catch {
      // Not this distribution's path; the next one may be.
    }
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'sbx-egress-ca-'));
  try {
    const file = path.join(dir, 'bundle.pem');
    await writeFile(file, `${pem.trimEnd()}\n${system}`, { mode: 0o600 });
    return await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
