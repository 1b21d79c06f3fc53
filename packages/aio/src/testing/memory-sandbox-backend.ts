import { Sandbox, SandboxNotFoundError, SandboxRuntimeError } from '@sbx/core';
import { MemorySandbox } from '@sbx/core/testing';
import type {
  ExecOptions,
  ExecResult,
  ExecuteCommandOptions,
  GlobOptions,
  GlobResult,
  GrepOptions,
  GrepResult,
  ListDirOptions,
  NetworkPolicySupport,
  ReadFileOptions,
  ScopedExecuteCommandOptions,
  WriteFileOptions,
} from '@sbx/core';
import type {
  BackendCallOptions,
  CreateSandboxRequest,
  SandboxBackend,
  SandboxHealth,
} from '../sandbox-backend.js';
import type { SandboxInfo } from '../sandbox-info.js';

/**
 * Test support: a `SandboxBackend` whose "containers" live in this process. Each container is a
 * `MemorySandbox` (its filesystem, and a shell that only knows `echo`), so files written through
 * one client are there for the next client of the same container, as with a real one. Wrap it in
 * core's `pausable` to hold any call at an exact point.
 */
export interface FakeContainer {
  readonly info: SandboxInfo;
  readonly request: CreateSandboxRequest | undefined;
  running: boolean;
  ready: boolean;
  /** `docker pause`d: every client call is refused until unpaused (a real one hangs). */
  paused: boolean;
  readonly state: MemorySandbox;
}

export interface MemorySandboxBackendOptions {
  kind?: 'local' | 'remote';
  usesThreadDataMounts?: boolean;
  /** What `networkSupport` answers; absent: the backend has no `networkSupport` (enforces none). */
  networkSupport?: NetworkPolicySupport;
}

export interface BackendCallRecord {
  readonly method:
    'create' | 'destroy' | 'checkHealth' | 'discover' | 'listRunning' | 'pause' | 'unpause';
  readonly sandboxId: string | undefined;
}

function echo(command: string): string {
  const m = /^echo (.*)$/s.exec(command.trim());
  return m ? `${m[1]}\n` : '(no output)';
}

export class MemorySandboxBackend implements SandboxBackend {
  readonly kind: 'local' | 'remote';
  readonly usesThreadDataMounts: boolean;
  readonly containers = new Map<string, FakeContainer>();
  readonly calls: BackendCallRecord[] = [];
  /** Clients handed out by `clientFor`, in order. */
  readonly clients: FakeContainerClient[] = [];
  /** New containers start without answering readiness. */
  startUnready = false;
  /** Per-id health answers that win over the container state; an Error is thrown. */
  readonly healthOverride = new Map<string, SandboxHealth | Error>();
  /** When set, `destroy` rejects with it (the container keeps running). */
  failDestroy: Error | undefined;
  /** When set, `listRunning` rejects with it. */
  failList: Error | undefined;
  #seq = 0;

  constructor(options: MemorySandboxBackendOptions = {}) {
    this.kind = options.kind ?? 'local';
    this.usesThreadDataMounts = options.usesThreadDataMounts ?? this.kind === 'local';
    const support = options.networkSupport;
    if (support !== undefined) this.networkSupport = async () => support;
  }

  networkSupport?: (options?: BackendCallOptions) => Promise<NetworkPolicySupport>;

  #newContainer(sandboxId: string, request: CreateSandboxRequest | undefined): FakeContainer {
    this.#seq += 1;
    const container: FakeContainer = {
      info: {
        sandboxId,
        sandboxUrl: `http://127.0.0.1:9/${sandboxId}/${this.#seq}`,
        containerName: `fake-${sandboxId}`,
        containerId: `c${this.#seq}`,
        createdAt: 1_700_000_000 + this.#seq,
        managed: true,
      },
      request,
      running: true,
      ready: !this.startUnready,
      paused: false,
      state: new MemorySandbox(sandboxId, { onCommand: (command) => echo(command) }),
    };
    this.containers.set(sandboxId, container);
    return container;
  }

  async create(request: CreateSandboxRequest): Promise<SandboxInfo> {
    this.calls.push({ method: 'create', sandboxId: request.sandboxId });
    const existing = this.containers.get(request.sandboxId);
    // A name conflict adopts the running container, as the local backend does.
    if (existing?.running) return existing.info;
    return this.#newContainer(request.sandboxId, request).info;
  }

  async destroy(info: SandboxInfo, _options?: BackendCallOptions): Promise<void> {
    this.calls.push({ method: 'destroy', sandboxId: info.sandboxId });
    if (this.failDestroy) throw this.failDestroy;
    const c = this.containers.get(info.sandboxId);
    if (c !== undefined) {
      c.running = false;
      this.containers.delete(info.sandboxId);
    }
  }

  async checkHealth(info: SandboxInfo, _options?: BackendCallOptions): Promise<SandboxHealth> {
    this.calls.push({ method: 'checkHealth', sandboxId: info.sandboxId });
    const override = this.healthOverride.get(info.sandboxId);
    if (override instanceof Error) throw override;
    if (override !== undefined) return override;
    return this.containers.get(info.sandboxId)?.running ? 'alive' : 'dead';
  }

  async discover(sandboxId: string, _options?: BackendCallOptions): Promise<SandboxInfo | null> {
    this.calls.push({ method: 'discover', sandboxId });
    const c = this.containers.get(sandboxId);
    // A fresh object per answer, as a real backend builds one per call.
    if (c?.running && c.paused) return { ...c.info, paused: true };
    return c?.running && c.ready ? { ...c.info } : null;
  }

  /** The engine's rules: a gone container is an error, one already paused is fine. */
  async pause(info: SandboxInfo, _options?: BackendCallOptions): Promise<void> {
    this.calls.push({ method: 'pause', sandboxId: info.sandboxId });
    this.#running(info.sandboxId).paused = true;
  }

  /** One not paused is fine (two instances resuming at once). */
  async unpause(info: SandboxInfo, _options?: BackendCallOptions): Promise<void> {
    this.calls.push({ method: 'unpause', sandboxId: info.sandboxId });
    this.#running(info.sandboxId).paused = false;
  }

  #running(sandboxId: string): FakeContainer {
    const c = this.containers.get(sandboxId);
    if (c === undefined || !c.running) {
      throw new SandboxNotFoundError(`container ${sandboxId} is gone`, sandboxId);
    }
    return c;
  }

  isPaused(sandboxId: string): boolean {
    return this.containers.get(sandboxId)?.paused === true;
  }

  async listRunning(_options?: BackendCallOptions): Promise<SandboxInfo[]> {
    this.calls.push({ method: 'listRunning', sandboxId: undefined });
    if (this.failList) throw this.failList;
    return [...this.containers.values()]
      .filter((c) => c.running)
      .map((c) => (c.paused ? { ...c.info, paused: true } : { ...c.info }));
  }

  /** The provider's readiness probe for these containers. */
  readinessProbe = async (info: SandboxInfo): Promise<boolean> =>
    this.containers.get(info.sandboxId)?.ready === true;

  /** The provider's client factory: a client over the container's state. */
  clientFor = (info: SandboxInfo): Sandbox => {
    const container = this.containers.get(info.sandboxId);
    const client = new FakeContainerClient(info, container);
    this.clients.push(client);
    return client;
  };

  /** A container someone else started (a peer instance, an earlier run). */
  startExternal(sandboxId: string): SandboxInfo {
    return this.#newContainer(sandboxId, undefined).info;
  }

  /** The container exits on its own. */
  kill(sandboxId: string): void {
    const c = this.containers.get(sandboxId);
    if (c !== undefined) c.running = false;
  }

  /** How often `method` was called (for `sandboxId`, when given). */
  count(method: BackendCallRecord['method'], sandboxId?: string): number {
    return this.calls.filter(
      (c) => c.method === method && (sandboxId === undefined || c.sandboxId === sandboxId),
    ).length;
  }

  isRunning(sandboxId: string): boolean {
    return this.containers.get(sandboxId)?.running === true;
  }
}

/** A client of one fake container; `close()` closes the client, never the container. */
export class FakeContainerClient extends Sandbox {
  readonly info: SandboxInfo;
  readonly #container: FakeContainer | undefined;
  closed = false;
  closeCount = 0;
  /** Scope ids released, in order. */
  readonly releasedScopes: string[] = [];
  /** When set, `close()` rejects with it (after marking the client closed). */
  failClose: Error | undefined;

  constructor(info: SandboxInfo, container: FakeContainer | undefined) {
    super(info.sandboxId);
    this.info = info;
    this.#container = container;
  }

  #use(): MemorySandbox {
    if (this.closed) throw new SandboxRuntimeError(`client of ${this.id} is closed`);
    if (this.#container === undefined) {
      throw new SandboxRuntimeError(`container ${this.id} is gone`);
    }
    // A real paused container accepts the connection and never answers; refusing makes a test
    // that reached one fail at once instead of hanging.
    if (this.#container.paused) throw new SandboxRuntimeError(`container ${this.id} is paused`);
    return this.#container.state;
  }

  exec(command: string, options?: ExecOptions): Promise<ExecResult> {
    return this.#use().exec(command, options);
  }
  override executeCommand(command: string, options?: ExecuteCommandOptions): Promise<string> {
    return this.#use().executeCommand(command, options);
  }
  override executeCommandInScope(
    command: string,
    options: ScopedExecuteCommandOptions,
  ): Promise<string> {
    return this.#use().executeCommandInScope(command, options);
  }
  override async releaseCommandScope(scopeId: string): Promise<void> {
    this.releasedScopes.push(scopeId);
  }
  readFile(path: string, options?: ReadFileOptions): Promise<string> {
    return this.#use().readFile(path, options);
  }
  downloadFile(path: string): Promise<Uint8Array> {
    return this.#use().downloadFile(path);
  }
  writeFile(path: string, content: string, options?: WriteFileOptions): Promise<void> {
    return this.#use().writeFile(path, content, options);
  }
  updateFile(path: string, content: Uint8Array): Promise<void> {
    return this.#use().updateFile(path, content);
  }
  listDir(path: string, options?: ListDirOptions): Promise<string[]> {
    return this.#use().listDir(path, options);
  }
  glob(path: string, pattern: string, options?: GlobOptions): Promise<GlobResult> {
    return this.#use().glob(path, pattern, options);
  }
  grep(path: string, pattern: string, options?: GrepOptions): Promise<GrepResult> {
    return this.#use().grep(path, pattern, options);
  }
  override async close(): Promise<void> {
    this.closed = true;
    this.closeCount += 1;
    if (this.failClose) throw this.failClose;
  }
}
