/**
 * The egress proxy a gateway runs for its sandboxes: one listener per sandbox, connection
 * accounting, and the dispatch of each connection's first request to CONNECT (`connect-tunnel.ts`)
 * or plain HTTP (`plain-http-forward.ts`). Decisions go through `egress-admission.ts`; brokered
 * credentials through `credential-broker.ts`.
 */
import { randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { createServer, type Socket } from 'node:net';
import {
  InvalidArgumentError,
  parseNetworkPolicy,
  silentLogger,
  type Logger,
  type NetworkPolicy,
} from '@sbx/core';
import { handleConnect } from './connect-tunnel.js';
import {
  CredentialBroker,
  type EgressBrokeredEnv,
  type EgressBrokeredSecret,
  type EgressPlaceholder,
  type EgressSecretProvider,
} from './credential-broker.js';
import {
  EgressAdmission,
  type EgressApprovalRequest,
  type EgressResolver,
} from './egress-admission.js';
import type { EgressCertificateAuthority } from './egress-certificate-authority.js';
import type { EgressContext, EgressResolvedLimits, SandboxState } from './egress-context.js';
import type {
  EgressEvent,
  EgressEventListener,
  EgressEvents,
  EgressMethod,
} from './egress-events.js';
import { Refusal, endWithRefusal } from './egress-refusal.js';
import { forwardPlainHttp } from './plain-http-forward.js';
import { parseRequestHead } from './request-head.js';
import { readUntil } from './socket-reader.js';

export type { EgressApprovalRequest, EgressResolver } from './egress-admission.js';

export interface EgressProxyLimits {
  /** Largest request head (request line and headers). Default 16 KiB. */
  readonly maxHeaderBytes?: number;
  /** Open connections per sandbox; more are refused at accept. Default 64. */
  readonly maxConnectionsPerSandbox?: number;
  /** Time to the end of the request head, and of the TLS ClientHello. Default 10 s. */
  readonly headerTimeoutMs?: number;
  /** A tunnel or forwarded request with no bytes either way this long is closed. Default 5 min. */
  readonly idleTimeoutMs?: number;
  /** DNS resolution of one request. Default 5 s. */
  readonly resolveTimeoutMs?: number;
  /** `onEgressRequest`'s answer; no answer in time is a denial. Default 30 s. */
  readonly approvalTimeoutMs?: number;
  /** Hosts approved at run time per sandbox. Default 256. */
  readonly maxApprovalsPerSandbox?: number;
  /** Largest secret swapped into a header. Default 8 KiB. */
  readonly maxSecretBytes?: number;
  /** `secretProvider`'s answer; no answer in time refuses the request (`502`). Default 5 s. */
  readonly secretTimeoutMs?: number;
  /** Request-scoped secrets brokered per sandbox at once (`brokerSecrets`). Default 64. */
  readonly maxBrokeredSecretsPerSandbox?: number;
}

export interface EgressProxyOptions {
  /** Default: the system resolver (`dns.lookup`, every address). Tests map names to 127.0.0.1. */
  readonly resolve?: EgressResolver;
  /**
   * Addresses of the refused classes (loopback, private, link-local, ...) this proxy may reach
   * anyway: the address itself, e.g. a registry mirror on the private network. Default none.
   */
  readonly allowPrivate?: (address: string) => boolean;
  /**
   * Asked when the policy denies a host for not being on the allow list (never for a deny rule or
   * a refused address): `true` approves `host:port` for the rest of this sandbox's life. A throw,
   * a `false` or no answer within `approvalTimeoutMs` is a denial (fail closed).
   */
  readonly onEgressRequest?: (request: EgressApprovalRequest) => Promise<boolean>;
  /**
   * The gateway's CA, needed to broker credentials (a sandbox with credentials is refused at
   * `openSandbox` without one). Its certificate is what brokering sandboxes must trust.
   */
  readonly certificateAuthority?: EgressCertificateAuthority;
  /** Where `provider` secrets come from; asked per request, never cached. */
  readonly secretProvider?: EgressSecretProvider;
  /** Where `env` secrets come from. Default `process.env` of the gateway. */
  readonly secretEnv?: Readonly<Record<string, string | undefined>>;
  /**
   * CA certificates (PEM) intercepted upstreams are verified against. Default: Node's system
   * roots. Never a way to skip verification: an upstream that fails it is refused.
   */
  readonly upstreamCa?: readonly string[];
  /**
   * Whether a brokering sandbox's every CONNECT is intercepted (default `true`), or only those to
   * hosts with a credential. See docs/egress.md for why the default reads everything.
   */
  readonly interceptAllHosts?: boolean;
  readonly limits?: EgressProxyLimits;
  readonly logger?: Logger;
}

/** Where a sandbox's listener binds: a loopback port, or a unix socket a namespace can bind in. */
export type EgressListen =
  { readonly host: string; readonly port: number } | { readonly path: string };

export interface EgressSandboxOptions {
  readonly sandboxId: string;
  readonly threadId?: string | undefined;
  /** The effective policy (already narrowed, see `narrowNetworkPolicy`). */
  readonly policy: NetworkPolicy;
  readonly listen: EgressListen;
  /**
   * Broker this sandbox's requests (intercept its TLS, refuse placeholders) even without policy
   * credentials, for request-scoped secrets (`brokerSecrets`). Default: when the policy has
   * credentials. Needs `certificateAuthority`.
   */
  readonly brokering?: boolean;
}

/** One sandbox's listener: everything that connects to it is that sandbox. */
export interface EgressSandboxListener {
  /** `{ host, port }` of a TCP listener, or the socket path. */
  readonly address: { readonly host: string; readonly port: number } | { readonly path: string };
  /**
   * The placeholder of each policy credential, for the sandbox's environment (e.g. the variable
   * the credential's `env` source names). Empty when the sandbox does not broker.
   */
  readonly placeholders: readonly EgressPlaceholder[];
  /** The CA certificate (PEM) the sandbox must trust when it brokers; `undefined` otherwise. */
  readonly caCertificatePem: string | undefined;
  /**
   * Request-scoped secrets that would be injected into a command's environment, brokered
   * instead: `env` holds placeholders for the sandbox, the values stay in the proxy until
   * `release`. Needs a brokering listener.
   */
  brokerSecrets(secrets: readonly EgressBrokeredSecret[]): EgressBrokeredEnv;
  /** Stops accepting and ends this sandbox's open connections. */
  close(): Promise<void>;
}

const DEFAULTS: EgressResolvedLimits = {
  maxHeaderBytes: 16 * 1024,
  maxConnectionsPerSandbox: 64,
  headerTimeoutMs: 10_000,
  idleTimeoutMs: 300_000,
  resolveTimeoutMs: 5_000,
  approvalTimeoutMs: 30_000,
  maxApprovalsPerSandbox: 256,
  maxSecretBytes: 8 * 1024,
  secretTimeoutMs: 5_000,
  maxBrokeredSecretsPerSandbox: 64,
};

const systemResolver: EgressResolver = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/**
 * HTTP CONNECT (TLS only, SNI checked against the CONNECT host) and plain HTTP in absolute form,
 * each request decided on its host by the sandbox's policy, resolved by the proxy, and connected
 * to the exact address it checked (so a second DNS answer cannot rebind it). The sandbox is known
 * by the listener it connected to (one per sandbox): nothing the sandbox sends can claim another's
 * identity.
 */
export class EgressProxy implements EgressEvents {
  readonly #limits: EgressResolvedLimits;
  readonly #options: EgressProxyOptions;
  readonly #logger: Logger;
  readonly #listeners = new Set<EgressEventListener>();
  readonly #sandboxes = new Map<string, SandboxState>();
  readonly #context: EgressContext;
  /** Placeholders are an HMAC under this key: stable per (sandbox, secret source) for its life. */
  readonly #placeholderKey = randomBytes(32);

  constructor(options: EgressProxyOptions = {}) {
    this.#options = options;
    this.#limits = { ...DEFAULTS, ...options.limits };
    this.#logger = options.logger ?? silentLogger;
    const admission = new EgressAdmission({
      resolve: options.resolve ?? systemResolver,
      allowPrivate: options.allowPrivate,
      onEgressRequest: options.onEgressRequest,
      limits: this.#limits,
      logger: this.#logger,
      isOpen: (state) => this.#sandboxes.get(state.sandboxId) === state,
    });
    this.#context = {
      limits: this.#limits,
      logger: this.#logger,
      certificateAuthority: options.certificateAuthority,
      upstreamCa: options.upstreamCa,
      interceptAllHosts: options.interceptAllHosts ?? true,
      decide: (state, method, host, port, verdict, reason) =>
        this.#emit({
          type: 'egress-decision',
          sandboxId: state.sandboxId,
          threadId: state.threadId,
          method,
          host,
          port,
          verdict,
          reason,
        }),
      admit: (state, host, port) => admission.admit(state, host, port),
    };
  }

  onEvent(listener: EgressEventListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Opens `options.sandboxId`'s listener. The policy is checked again here (it may come from
   * storage); one listener per sandbox.
   */
  async openSandbox(options: EgressSandboxOptions): Promise<EgressSandboxListener> {
    if (this.#sandboxes.has(options.sandboxId)) {
      throw new InvalidArgumentError(`egress: ${options.sandboxId} has a listener already`);
    }
    const policy = parseNetworkPolicy(options.policy, 'policy');
    const brokering = options.brokering ?? policy.credentials.length > 0;
    if (brokering && !this.#options.certificateAuthority) {
      // Without a CA the proxy cannot see into TLS: the credentials could be neither swapped nor
      // guarded, so the sandbox is refused rather than run with its policy half enforced.
      throw new InvalidArgumentError(
        `egress: ${options.sandboxId} brokers credentials; the proxy needs a certificateAuthority`,
      );
    }
    const broker = brokering
      ? new CredentialBroker({
          sandboxId: options.sandboxId,
          policy,
          placeholderKey: this.#placeholderKey,
          secretEnv: this.#options.secretEnv ?? process.env,
          secretProvider: this.#options.secretProvider,
          maxSecretBytes: this.#limits.maxSecretBytes,
          secretTimeoutMs: this.#limits.secretTimeoutMs,
          maxBrokeredSecrets: this.#limits.maxBrokeredSecretsPerSandbox,
          logger: this.#logger,
        })
      : undefined;
    const ca = this.#options.certificateAuthority;
    if (broker && ca) {
      // Issued now, in WebCrypto's thread pool, so the first request to a credential host does
      // not wait for a signature. A failure here is retried at that request (and refused there).
      for (const host of new Set(policy.credentials.map((c) => c.host))) {
        ca.secureContextFor(host).catch((error: unknown) =>
          this.#logger.warn('egress leaf certificate failed', { host, error }),
        );
      }
    }
    // No Nagle delay: a proxy's small writes (heads, TLS records) would otherwise wait for ACKs.
    const server = createServer({ noDelay: true });
    const state: SandboxState = {
      sandboxId: options.sandboxId,
      threadId: options.threadId,
      policy,
      sockets: new Set(),
      approved: new Set(),
      server,
      broker,
    };
    server.on('connection', (socket) => this.#accept(state, socket));
    server.on('error', (error) =>
      this.#logger.error('egress listener failed', { sandboxId: state.sandboxId, error }),
    );
    this.#sandboxes.set(options.sandboxId, state);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        if ('path' in options.listen) server.listen(options.listen.path, resolve);
        else server.listen(options.listen.port, options.listen.host, resolve);
      });
    } catch (error) {
      this.#sandboxes.delete(options.sandboxId);
      throw error;
    }
    const bound = server.address();
    const address =
      typeof bound === 'string' || bound === null
        ? { path: 'path' in options.listen ? options.listen.path : String(bound) }
        : { host: bound.address, port: bound.port };
    return {
      address,
      placeholders: broker?.placeholders ?? [],
      caCertificatePem: broker ? this.#options.certificateAuthority?.certificatePem : undefined,
      brokerSecrets: (secrets) => {
        if (!broker) {
          throw new InvalidArgumentError(
            `egress: ${state.sandboxId} does not broker (open it with brokering: true)`,
          );
        }
        return broker.broker(secrets);
      },
      close: () => this.#closeSandbox(state),
    };
  }

  /** Closes every sandbox's listener and connection. */
  async close(): Promise<void> {
    await Promise.all([...this.#sandboxes.values()].map((s) => this.#closeSandbox(s)));
  }

  async #closeSandbox(state: SandboxState): Promise<void> {
    if (this.#sandboxes.get(state.sandboxId) !== state) return;
    this.#sandboxes.delete(state.sandboxId);
    const closed = new Promise<void>((resolve) => state.server.close(() => resolve()));
    for (const socket of state.sockets) socket.destroy();
    await closed;
  }

  #emit(event: EgressEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (error) {
        this.#logger.warn('egress event listener failed', { error });
      }
    }
  }

  #refuse(state: SandboxState, socket: Socket, method: EgressMethod, refusal: Refusal): void {
    this.#context.decide(state, method, '', 0, 'deny', refusal.reason);
    endWithRefusal(socket, refusal);
  }

  #accept(state: SandboxState, socket: Socket): void {
    // Counted at accept, before a byte is read: a flood of idle connections from one sandbox
    // exhausts its own share only.
    if (state.sockets.size >= this.#limits.maxConnectionsPerSandbox) {
      socket.on('error', () => {});
      this.#refuse(state, socket, 'unknown', new Refusal(503, 'connection-limit'));
      socket.destroySoon();
      return;
    }
    state.sockets.add(socket);
    socket.once('close', () => state.sockets.delete(socket));
    socket.on('error', (error) =>
      this.#logger.debug('egress client socket error', { sandboxId: state.sandboxId, error }),
    );
    this.#serve(state, socket).catch((error: unknown) => {
      this.#logger.error('egress request failed', { sandboxId: state.sandboxId, error });
      socket.destroy();
    });
  }

  async #serve(state: SandboxState, socket: Socket): Promise<void> {
    const max = this.#limits.maxHeaderBytes;
    const read = await readUntil(
      socket,
      Buffer.alloc(0),
      max,
      this.#limits.headerTimeoutMs,
      (data, seen) => {
        // Only the new bytes (and the three before them) can complete the terminator.
        const end = data.indexOf('\r\n\r\n', Math.max(0, seen - 3), 'latin1');
        if (end === -1) return 'more';
        return end + 4 > max ? new Refusal(431, 'header-too-large') : end;
      },
    );
    if (read instanceof Refusal) return this.#refuse(state, socket, 'unknown', read);
    const head = parseRequestHead(read.data.subarray(0, read.end).toString('latin1'));
    const rest = read.data.subarray(read.end + 4);
    if (!head) return this.#refuse(state, socket, 'unknown', new Refusal(400, 'bad-request'));
    if (head.method === 'CONNECT') return handleConnect(this.#context, state, socket, head, rest);
    return forwardPlainHttp(this.#context, state, socket, head, rest);
  }
}
