import { lookup } from 'node:dns/promises';
import { createServer, connect, type Server, type Socket } from 'node:net';
import {
  InvalidArgumentError,
  networkVerdict,
  parseNetworkPolicy,
  silentLogger,
  type Logger,
  type NetworkPolicy,
} from '@sbx/core';
import { blockedAddressReason, parseIpLiteral } from './egress-address.js';
import type { EgressEvent, EgressEventListener, EgressEvents } from './egress-events.js';
import { headerValues, parseRequestHead, type RequestHead } from './request-head.js';
import { MAX_CLIENT_HELLO_BYTES, parseClientHello } from './tls-client-hello.js';

/** Resolves a host name to its addresses; the proxy's own DNS, never the sandbox's. */
export type EgressResolver = (host: string) => Promise<readonly string[]>;

/** A request the policy denied, offered to the host application for approval. */
export interface EgressApprovalRequest {
  readonly sandboxId: string;
  readonly threadId: string | undefined;
  readonly host: string;
  readonly port: number;
}

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
}

/** One sandbox's listener: everything that connects to it is that sandbox. */
export interface EgressSandboxListener {
  /** `{ host, port }` of a TCP listener, or the socket path. */
  readonly address: { readonly host: string; readonly port: number } | { readonly path: string };
  /** Stops accepting and ends this sandbox's open connections. */
  close(): Promise<void>;
}

const DEFAULTS = {
  maxHeaderBytes: 16 * 1024,
  maxConnectionsPerSandbox: 64,
  headerTimeoutMs: 10_000,
  idleTimeoutMs: 300_000,
  resolveTimeoutMs: 5_000,
  approvalTimeoutMs: 30_000,
  maxApprovalsPerSandbox: 256,
};

interface SandboxState {
  readonly sandboxId: string;
  readonly threadId: string | undefined;
  readonly policy: NetworkPolicy;
  readonly sockets: Set<Socket>;
  readonly approved: Set<string>;
  readonly server: Server;
}

class Refusal {
  constructor(
    readonly status: number,
    readonly reason: string,
  ) {}
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<T>((resolve) => {
      timer = setTimeout(() => resolve(onTimeout()), ms);
      timer.unref();
    }),
  ]).finally(() => clearTimeout(timer));
}

const systemResolver: EgressResolver = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/**
 * The egress proxy a gateway runs for its sandboxes: HTTP CONNECT (TLS only, SNI checked against
 * the CONNECT host) and plain HTTP in absolute form, each request decided on its host by the
 * sandbox's policy, resolved by the proxy, and connected to the exact address it checked (so a
 * second DNS answer cannot rebind it). The sandbox is known by the listener it connected to (one
 * per sandbox): nothing the sandbox sends can claim another's identity.
 */
export class EgressProxy implements EgressEvents {
  readonly #resolve: EgressResolver;
  readonly #limits: Required<EgressProxyLimits>;
  readonly #options: EgressProxyOptions;
  readonly #logger: Logger;
  readonly #listeners = new Set<EgressEventListener>();
  readonly #sandboxes = new Map<string, SandboxState>();

  constructor(options: EgressProxyOptions = {}) {
    this.#options = options;
    this.#resolve = options.resolve ?? systemResolver;
    this.#limits = { ...DEFAULTS, ...options.limits };
    this.#logger = options.logger ?? silentLogger;
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
    // No Nagle delay: a proxy's small writes (heads, TLS records) would otherwise wait for ACKs.
    const server = createServer({ noDelay: true });
    const state: SandboxState = {
      sandboxId: options.sandboxId,
      threadId: options.threadId,
      policy,
      sockets: new Set(),
      approved: new Set(),
      server,
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
    return { address, close: () => this.#closeSandbox(state) };
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

  #decide(
    state: SandboxState,
    method: 'CONNECT' | 'HTTP' | 'unknown',
    host: string,
    port: number,
    verdict: 'allow' | 'deny',
    reason: string,
  ): void {
    this.#emit({
      type: 'egress-decision',
      sandboxId: state.sandboxId,
      threadId: state.threadId,
      method,
      host,
      port,
      verdict,
      reason,
    });
  }

  #accept(state: SandboxState, socket: Socket): void {
    // Counted at accept, before a byte is read: a flood of idle connections from one sandbox
    // exhausts its own share only.
    if (state.sockets.size >= this.#limits.maxConnectionsPerSandbox) {
      this.#decide(state, 'unknown', '', 0, 'deny', 'connection-limit');
      socket.on('error', () => {});
      socket.end(
        'HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n',
      );
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

  /** Reads until `done` says the buffered bytes are complete, within `max` bytes and the timeout. */
  #readUntil(
    socket: Socket,
    initial: Buffer,
    max: number,
    done: (data: Buffer) => number | 'more' | Refusal,
  ): Promise<{ data: Buffer; end: number } | Refusal> {
    return new Promise((resolve) => {
      let data = initial;
      const finish = (result: { data: Buffer; end: number } | Refusal) => {
        clearTimeout(timer);
        socket.off('data', onData);
        socket.off('end', onEnd);
        socket.off('close', onEnd);
        socket.pause();
        resolve(result);
      };
      const check = () => {
        const verdict = done(data);
        if (verdict instanceof Refusal) return finish(verdict);
        if (verdict !== 'more') return finish({ data, end: verdict });
        if (data.length >= max) return finish(new Refusal(431, 'header-too-large'));
      };
      const onData = (chunk: Buffer) => {
        // Bounded before copying: never hold more than `max` plus one chunk.
        data = data.length === 0 ? chunk : Buffer.concat([data, chunk]);
        check();
      };
      const onEnd = () => finish(new Refusal(400, 'bad-request'));
      const timer = setTimeout(
        () => finish(new Refusal(408, 'header-timeout')),
        this.#limits.headerTimeoutMs,
      );
      timer.unref();
      socket.on('data', onData);
      socket.once('end', onEnd);
      socket.once('close', onEnd);
      if (data.length > 0) check();
      socket.resume();
    });
  }

  async #serve(state: SandboxState, socket: Socket): Promise<void> {
    const max = this.#limits.maxHeaderBytes;
    const read = await this.#readUntil(socket, Buffer.alloc(0), max, (data) => {
      const end = data.indexOf('\r\n\r\n', 0, 'latin1');
      if (end === -1) return 'more';
      return end + 4 > max ? new Refusal(431, 'header-too-large') : end;
    });
    if (read instanceof Refusal) return this.#refuse(state, socket, 'unknown', '', 0, read);
    const head = parseRequestHead(read.data.subarray(0, read.end).toString('latin1'));
    const rest = read.data.subarray(read.end + 4);
    if (!head)
      return this.#refuse(state, socket, 'unknown', '', 0, new Refusal(400, 'bad-request'));
    if (head.method === 'CONNECT') return this.#connect(state, socket, head, rest);
    return this.#forward(state, socket, head, rest);
  }

  #refuse(
    state: SandboxState,
    socket: Socket,
    method: 'CONNECT' | 'HTTP' | 'unknown',
    host: string,
    port: number,
    refusal: Refusal,
    respond = true,
  ): void {
    this.#decide(state, method, host, port, 'deny', refusal.reason);
    if (respond && !socket.destroyed) {
      const text = STATUS_TEXT[refusal.status] ?? 'Error';
      socket.end(
        `HTTP/1.1 ${refusal.status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\nX-Sbx-Egress-Refused: ${refusal.reason}\r\n\r\n`,
      );
    } else {
      socket.destroy();
    }
  }

  /** `host[:port]` of an authority, host lower-cased; `undefined` if malformed. */
  #authority(
    text: string,
    defaultPort: number | undefined,
  ): { host: string; port: number } | undefined {
    const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]/@?#\s]+)(?::([0-9]{1,5}))?$/.exec(text);
    if (!match) return undefined;
    const port = match[2] !== undefined ? Number(match[2]) : defaultPort;
    if (port === undefined || port < 1 || port > 65535) return undefined;
    let host = match[1]!.toLowerCase();
    if (host.endsWith('.')) host = host.slice(0, -1);
    return { host, port };
  }

  /**
   * The address to connect to for `host:port`, or the refusal. The name is decided by the policy
   * first; every resolved address must then pass the address check (one bad answer refuses the
   * request: a resolver that mixes in 127.0.0.1 is rebinding).
   */
  async #admit(
    state: SandboxState,
    host: string,
    port: number,
  ): Promise<{ address: string; reason: string } | Refusal> {
    const literal = parseIpLiteral(host);
    if (literal !== undefined) {
      // Rules name domains; an IP literal is reachable in open mode only, and checked as any address.
      if (state.policy.mode !== 'open') return new Refusal(403, 'ip-literal');
      return this.#checkAddresses([literal], 'open');
    }
    if (!/^[a-z0-9.-]{1,253}$/.test(host)) return new Refusal(400, 'bad-request');
    const verdict = networkVerdict(state.policy, host, port);
    let reason = verdict.reason;
    if (!verdict.allowed) {
      const approvable = verdict.reason === 'not-allowed' && this.#options.onEgressRequest;
      if (!approvable || !(await this.#approve(state, host, port))) {
        return new Refusal(403, verdict.reason);
      }
      reason = 'approved';
    }
    let addresses: readonly string[];
    try {
      addresses = await withTimeout(this.#resolve(host), this.#limits.resolveTimeoutMs, () => []);
    } catch (error) {
      this.#logger.debug('egress resolve failed', { host, error });
      return new Refusal(502, 'resolve-failed');
    }
    if (addresses.length === 0) return new Refusal(502, 'resolve-failed');
    return this.#checkAddresses(addresses, reason);
  }

  #checkAddresses(
    addresses: readonly string[],
    reason: string,
  ): { address: string; reason: string } | Refusal {
    for (const address of addresses) {
      const blocked = blockedAddressReason(address);
      if (blocked !== undefined && !this.#options.allowPrivate?.(address)) {
        return new Refusal(403, `blocked-address:${blocked}`);
      }
    }
    return { address: addresses[0]!, reason };
  }

  async #approve(state: SandboxState, host: string, port: number): Promise<boolean> {
    const key = `${host}:${port}`;
    if (state.approved.has(key)) return true;
    const hook = this.#options.onEgressRequest!;
    const request = { sandboxId: state.sandboxId, threadId: state.threadId, host, port };
    let approved = false;
    try {
      approved =
        (await withTimeout(hook(request), this.#limits.approvalTimeoutMs, () => false)) === true;
    } catch (error) {
      this.#logger.warn('egress approval hook failed; denied', { ...request, error });
      return false;
    }
    if (!approved) return false;
    if (state.approved.size >= this.#limits.maxApprovalsPerSandbox) {
      this.#logger.warn('egress approvals full for this sandbox; denied', request);
      return false;
    }
    if (this.#sandboxes.get(state.sandboxId) !== state) return false;
    state.approved.add(key);
    return true;
  }

  async #connect(
    state: SandboxState,
    socket: Socket,
    head: RequestHead,
    rest: Buffer,
  ): Promise<void> {
    const target = this.#authority(head.target, undefined);
    if (!target) {
      return this.#refuse(state, socket, 'CONNECT', '', 0, new Refusal(400, 'bad-request'));
    }
    const { host, port } = target;
    const admitted = await this.#admit(state, host, port);
    if (admitted instanceof Refusal)
      return this.#refuse(state, socket, 'CONNECT', host, port, admitted);
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    // The tunnel carries TLS whose server name is the CONNECT host: a hello naming another host
    // (domain fronting) would reach it through an address approved for this one.
    const hello = await this.#readUntil(socket, rest, MAX_CLIENT_HELLO_BYTES, (data) => {
      const parsed = parseClientHello(data);
      if (parsed.kind === 'incomplete') return 'more';
      if (parsed.kind === 'invalid') return new Refusal(400, parsed.reason);
      const isLiteral = parseIpLiteral(host) !== undefined;
      if (parsed.serverName === undefined)
        return isLiteral ? data.length : new Refusal(403, 'no-sni');
      const sni = parsed.serverName.toLowerCase().replace(/\.$/, '');
      return sni === host ? data.length : new Refusal(403, 'sni-mismatch');
    });
    if (hello instanceof Refusal) {
      return this.#refuse(state, socket, 'CONNECT', host, port, hello, false);
    }
    this.#pipe(state, socket, 'CONNECT', host, port, admitted, hello.data);
  }

  async #forward(
    state: SandboxState,
    socket: Socket,
    head: RequestHead,
    rest: Buffer,
  ): Promise<void> {
    const url = /^http:\/\/([^/?#]+)([/?#].*)?$/i.exec(head.target);
    if (!url) {
      // https:// in absolute form would make the proxy the TLS client; origin-form has no host.
      return this.#refuse(state, socket, 'HTTP', '', 0, new Refusal(400, 'bad-request'));
    }
    const target = this.#authority(url[1]!, 80);
    if (!target) return this.#refuse(state, socket, 'HTTP', '', 0, new Refusal(400, 'bad-request'));
    const { host, port } = target;
    const hosts = headerValues(head, 'host');
    const hostHeader = hosts.length === 1 ? this.#authority(hosts[0]!, 80) : undefined;
    if (!hostHeader || hostHeader.host !== host || hostHeader.port !== port) {
      // The upstream routes on Host: a Host naming another site is fronting through this address.
      return this.#refuse(state, socket, 'HTTP', host, port, new Refusal(400, 'host-mismatch'));
    }
    const admitted = await this.#admit(state, host, port);
    if (admitted instanceof Refusal)
      return this.#refuse(state, socket, 'HTTP', host, port, admitted);
    // One request per connection: a second request on a kept-alive connection would reach this
    // upstream without a decision of its own.
    const headers = head.headers.filter(
      ([name]) =>
        !['connection', 'proxy-connection', 'keep-alive', 'proxy-authorization'].includes(name),
    );
    const path = url[2] === undefined ? '/' : url[2].startsWith('/') ? url[2] : `/${url[2]}`;
    const outgoing = Buffer.from(
      `${head.method} ${path} ${head.version}\r\n` +
        headers.map(([n, v]) => `${n}: ${v}\r\n`).join('') +
        'connection: close\r\n\r\n',
      'latin1',
    );
    this.#pipe(state, socket, 'HTTP', host, port, admitted, Buffer.concat([outgoing, rest]));
  }

  #pipe(
    state: SandboxState,
    client: Socket,
    method: 'CONNECT' | 'HTTP',
    host: string,
    port: number,
    admitted: { readonly address: string; readonly reason: string },
    first: Buffer,
  ): void {
    // Not counted against the sandbox: each upstream lives and dies with its counted client.
    const upstream = connect({ host: admitted.address, port, noDelay: true });
    const idle = this.#limits.idleTimeoutMs;
    upstream.setTimeout(idle, () => upstream.destroy());
    client.setTimeout(idle, () => client.destroy());
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      this.#decide(state, method, host, port, 'allow', admitted.reason);
      upstream.write(first);
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
    upstream.on('error', (error) => {
      if (!connected) {
        this.#decide(state, method, host, port, 'deny', 'upstream-failed');
        if (method === 'HTTP') {
          client.end('HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
          return;
        }
      }
      this.#logger.debug('egress upstream error', { sandboxId: state.sandboxId, host, error });
      client.destroy();
    });
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroySoon());
  }
}
