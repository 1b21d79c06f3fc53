import { SandboxRuntimeError, errorMessage, loadOptionalDependency } from '@sbx/core';
import type {
  E2BClient,
  E2BConnectOptions,
  E2BCreateOptions,
  E2BListOptions,
  E2BPauseOptions,
  E2BPaginator,
  E2BRemoteSandbox,
} from './e2b-client.js';

/** Connection options forwarded to every SDK call (`ConnectionOpts`). */
export interface E2BSdkConnection {
  apiKey?: string;
  domain?: string;
  /** Control-plane base URL (self-hosted deployments, local stand-ins). */
  apiUrl?: string;
  /** envd base URL for every VM (self-hosted deployments, local stand-ins). */
  sandboxUrl?: string;
  requestTimeoutMs?: number;
}

/** The members of the SDK's `Sandbox` class this module calls. */
interface SdkSandboxInstance {
  readonly sandboxId: string;
  readonly commands: E2BRemoteSandbox['commands'];
  readonly files: E2BRemoteSandbox['files'];
  setTimeout(timeoutMs: number): Promise<void>;
  kill(): Promise<boolean>;
}

interface SdkSandboxClass {
  create(opts: Record<string, unknown>): Promise<SdkSandboxInstance>;
  connect(sandboxId: string, opts?: Record<string, unknown>): Promise<SdkSandboxInstance>;
  pause(sandboxId: string, opts?: Record<string, unknown>): Promise<boolean>;
  list(opts?: Record<string, unknown>): E2BPaginator;
}

interface SdkModule {
  Sandbox: SdkSandboxClass;
}

function defined<T extends object>(obj: T): T {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as T;
}

function wrap(sandbox: SdkSandboxInstance): E2BRemoteSandbox {
  return {
    sandboxId: sandbox.sandboxId,
    commands: sandbox.commands,
    files: sandbox.files,
    setTimeout: (ms) => sandbox.setTimeout(ms),
    kill: () => sandbox.kill(),
    // The SDK speaks stateless HTTP: there is no connection to give back.
    close: async () => undefined,
  };
}

/** Where the SDK's control-plane calls go, as an operator would look it up. */
export function e2bApiHost(connection: E2BSdkConnection): string {
  if (connection.apiUrl) {
    try {
      return new URL(connection.apiUrl).host;
    } catch {
      return connection.apiUrl;
    }
  }
  return `api.${connection.domain ?? 'e2b.app'}`;
}

/** The network-level failure of a fetch (refused, unresolvable, reset), not an HTTP answer. */
function isUnreachable(err: unknown): err is Error {
  return err instanceof TypeError && err.message === 'fetch failed';
}

/**
 * The SDK reports an unreachable API as a bare `TypeError: fetch failed`; the operator needs the
 * host and the cause, and callers need a typed error they can classify as "sbx could not work".
 */
async function reachable<T>(connection: E2BSdkConnection, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (!isUnreachable(err)) throw err;
    const cause = err.cause === undefined ? err.message : errorMessage(err.cause);
    throw new SandboxRuntimeError(
      `E2B API at ${e2bApiHost(connection)} is unreachable (${cause}); check sandbox.e2b.api_url or domain and the network`,
      { cause: err },
    );
  }
}

/**
 * The real `E2BClient`: the `e2b` SDK, imported on first use (it is an optional peer dependency;
 * a missing install raises `MissingDependencyError` naming the install command).
 */
export class SdkE2BClient implements E2BClient {
  readonly #connection: E2BSdkConnection;
  #module: Promise<SdkModule> | undefined;

  constructor(connection: E2BSdkConnection = {}) {
    this.#connection = defined({ ...connection });
  }

  #sdk(): Promise<SdkModule> {
    this.#module ??= loadOptionalDependency<SdkModule>('e2b', '@sbx/e2b');
    return this.#module;
  }

  async create(opts: E2BCreateOptions): Promise<E2BRemoteSandbox> {
    const { Sandbox } = await this.#sdk();
    const sandbox = await reachable(this.#connection, () =>
      Sandbox.create(
        defined({
          ...this.#connection,
          template: opts.template,
          metadata: opts.metadata,
          timeoutMs: opts.timeoutMs,
          envs: opts.envs,
          signal: opts.signal,
        }),
      ),
    );
    return wrap(sandbox);
  }

  async connect(sandboxId: string, opts: E2BConnectOptions = {}): Promise<E2BRemoteSandbox> {
    const { Sandbox } = await this.#sdk();
    return wrap(
      await reachable(this.#connection, () =>
        Sandbox.connect(
          sandboxId,
          defined({ ...this.#connection, timeoutMs: opts.timeoutMs, signal: opts.signal }),
        ),
      ),
    );
  }

  async pause(sandboxId: string, opts: E2BPauseOptions = {}): Promise<boolean> {
    const { Sandbox } = await this.#sdk();
    return reachable(this.#connection, () =>
      Sandbox.pause(sandboxId, defined({ ...this.#connection, signal: opts.signal })),
    );
  }

  list(opts: E2BListOptions = {}): E2BPaginator {
    // `list` is synchronous in the SDK; the module may still be loading, so the first page waits
    // for it and later pages go straight to the SDK's paginator.
    let inner: E2BPaginator | undefined;
    const load = async (): Promise<E2BPaginator> => {
      if (inner === undefined) {
        const { Sandbox } = await this.#sdk();
        inner = Sandbox.list(defined({ ...this.#connection, ...opts }));
      }
      return inner;
    };
    return {
      get hasNext() {
        return inner === undefined ? true : inner.hasNext;
      },
      get nextToken() {
        return inner?.nextToken;
      },
      nextItems: async () => {
        const paginator = await load();
        return reachable(this.#connection, () => paginator.nextItems());
      },
    };
  }
}
