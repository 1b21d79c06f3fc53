import { chmod, chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  InvalidArgumentError,
  NetworkPolicyUnenforceableError,
  type EgressAttachment,
  type EgressGateway,
  type EgressGatewayRequest,
} from '@sbx/core';
import type { EgressPlaceholder } from './credential-broker.js';
import type { EgressProxy } from './egress-proxy.js';

/** `sun_path` holds 108 bytes with its terminating NUL. */
const MAX_SOCKET_PATH_BYTES = 107;
const SOCKET_NAME = 'proxy.sock';
/** What `mkdtemp` adds to the prefix: `sbx-egress-` and six characters, and the separators. */
const DIRECTORY_BYTES = '/sbx-egress-XXXXXX/'.length;

export interface EgressProxyGatewayOptions {
  /**
   * Where each sandbox's private socket directory is made. Default the system temporary
   * directory. Must be short: a unix socket path has at most 107 bytes.
   */
  readonly socketRoot?: string;
  /**
   * Whether sandboxes whose policy has credentials are opened (brokered): set it when the proxy
   * has a `certificateAuthority`. Default false: such a policy is refused, and a provider that
   * asks `brokersCredentials` refuses it at acquire.
   */
  readonly brokersCredentials?: boolean;
}

/** A variable name every shell and the sandbox's environment check accept. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/**
 * The `EgressGateway` of `@sbx/core` over an `EgressProxy`: each sandbox's listener is a unix
 * socket (`0600`) in a directory of its own (`0700`), owned by the gateway's user or, when the
 * request names one, by the sandbox's host user (`socketOwner`): no other host user can reach
 * it, and the provider binds the socket itself into the sandbox.
 */
export class EgressProxyGateway implements EgressGateway {
  readonly #proxy: EgressProxy;
  readonly #socketRoot: string;
  readonly #brokersCredentials: boolean;

  constructor(proxy: EgressProxy, options: EgressProxyGatewayOptions = {}) {
    this.#proxy = proxy;
    this.#socketRoot = path.resolve(options.socketRoot ?? tmpdir());
    this.#brokersCredentials = options.brokersCredentials === true;
    const longest = Buffer.byteLength(this.#socketRoot) + DIRECTORY_BYTES + SOCKET_NAME.length;
    if (longest > MAX_SOCKET_PATH_BYTES) {
      throw new InvalidArgumentError(
        `egress socketRoot ${JSON.stringify(this.#socketRoot)} is too long for a unix socket path (at most ${MAX_SOCKET_PATH_BYTES - DIRECTORY_BYTES - SOCKET_NAME.length} bytes)`,
      );
    }
  }

  /** As configured (`EgressProxyGatewayOptions.brokersCredentials`). */
  get brokersCredentials(): boolean {
    return this.#brokersCredentials;
  }

  /**
   * @throws NetworkPolicyUnenforceableError for a policy with credentials (see
   *   `brokersCredentials`); InvalidArgumentError when the sandbox has a listener already
   */
  async open(request: EgressGatewayRequest): Promise<EgressAttachment> {
    if (request.policy.credentials.length > 0 && !this.brokersCredentials) {
      throw new NetworkPolicyUnenforceableError('EgressProxyGateway', request.policy.mode);
    }
    const directory = await mkdtemp(path.join(this.#socketRoot, 'sbx-egress-'));
    const socketPath = path.join(directory, SOCKET_NAME);
    let listener;
    try {
      listener = await this.#proxy.openSandbox({
        sandboxId: request.sandboxId,
        threadId: request.threadId,
        policy: request.policy,
        listen: { path: socketPath },
      });
      await chmod(socketPath, 0o600);
      const owner = request.socketOwner;
      if (owner) {
        // The sandbox's host user resolves the socket's path itself (bubblewrap binds it as that
        // user), so it must own the directory; no other host user can enter it.
        await chown(socketPath, owner.uid, owner.gid);
        await chown(directory, owner.uid, owner.gid);
      }
    } catch (error) {
      await listener?.close();
      await rm(directory, { recursive: true, force: true });
      throw error;
    }
    const opened = listener;
    let closing: Promise<void> | undefined;
    return {
      socketPath,
      env: placeholderEnv(opened.placeholders),
      ...(opened.caCertificatePem !== undefined
        ? { caCertificatePem: opened.caCertificatePem }
        : {}),
      close: () => {
        closing ??= opened.close().finally(() => rm(directory, { recursive: true, force: true }));
        return closing;
      },
    };
  }
}

/**
 * The sandbox's variables of its brokered credentials: for a `secret_env` credential, the variable
 * it names holds the placeholder (tools send it as they would the token). A credential from the
 * secret provider, or whose variable name a shell could not carry, gets none: its placeholder is
 * not something a tool would look for under a made-up name.
 */
function placeholderEnv(placeholders: readonly EgressPlaceholder[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of placeholders) {
    if (entry.source?.kind === 'env' && ENV_NAME.test(entry.source.name)) {
      env[entry.source.name] = entry.placeholder;
    }
  }
  return env;
}
