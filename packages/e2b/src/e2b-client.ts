/**
 * The slice of the `e2b` SDK (2.51) the provider uses, as an injectable port. Names, argument shapes
 * and units (milliseconds) follow the SDK so the real implementation is a thin pass-through; tests
 * inject `FakeE2BClient` for precise fault injection and deterministic interleavings.
 *
 * Error contract (the SDK's, which every implementation keeps): failures are `Error`s whose `name`
 * is the SDK class name — `SandboxNotFoundError` (VM gone), `FileNotFoundError`, `TimeoutError`,
 * `CommandExitError` (`commands.run` on a non-zero exit, carrying `exitCode`, `stdout`, `stderr`),
 * ... — so callers classify by name (see `e2b-errors.ts`) without importing the SDK.
 */

export type E2BSandboxState = 'running' | 'paused';

/** `SandboxOpts` subset used to create a VM. */
export interface E2BCreateOptions {
  template: string;
  metadata: Record<string, string>;
  /** Remote idle lifetime; omitted means the SDK default. */
  timeoutMs?: number;
  /** Environment of every command in the VM. */
  envs?: Record<string, string>;
  signal?: AbortSignal;
}

/** `SandboxConnectOpts` subset. */
export interface E2BConnectOptions {
  /** Only ever extends a running VM's timeout (SDK semantics). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** `SandboxPauseOpts` subset. */
export interface E2BPauseOptions {
  signal?: AbortSignal;
}

/** `SandboxListOpts` subset. */
export interface E2BListOptions {
  query?: {
    metadata?: Record<string, string>;
    state?: E2BSandboxState[];
  };
  /** Page size. */
  limit?: number;
  nextToken?: string;
}

/** `SandboxInfo` subset returned by `list`. */
export interface E2BSandboxInfo {
  sandboxId: string;
  templateId?: string;
  metadata: Record<string, string>;
  startedAt?: Date;
  state?: E2BSandboxState;
}

/** `SandboxPaginator`: `nextItems()` throws once `hasNext` is false. */
export interface E2BPaginator {
  readonly hasNext: boolean;
  readonly nextToken?: string | undefined;
  nextItems(): Promise<E2BSandboxInfo[]>;
}

/** `CommandResult`. */
export interface E2BCommandResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  error?: string;
}

/** The SDK's own default for `commands.run` when no `timeoutMs` is given. */
export const SDK_DEFAULT_COMMAND_TIMEOUT_MS = 60_000;

/** `CommandStartOpts` subset (foreground only). */
export interface E2BCommandOptions {
  envs?: Record<string, string>;
  cwd?: string;
  /** 0 disables the limit; omitted means the SDK default (60 s). */
  timeoutMs?: number;
  onStdout?: (data: string) => void;
  onStderr?: (data: string) => void;
  signal?: AbortSignal;
}

/** `CommandHandle` subset: a command started with `background: true`. */
export interface E2BCommandHandle {
  readonly pid: number;
  /** Rejects with a `CommandExitError` on a non-zero exit, like `run`. */
  wait(): Promise<E2BCommandResult>;
  /** Stops receiving the command's events; the command keeps running. */
  disconnect(): Promise<void>;
}

/** `ProcessInfo`: a command or PTY session envd runs. */
export interface E2BProcessInfo {
  pid: number;
  tag?: string;
  cmd: string;
  args: string[];
  envs: Record<string, string>;
  cwd?: string;
}

/** `CommandConnectOpts`. */
export interface E2BCommandConnectOptions {
  /** 0 disables the limit; omitted means the SDK default (60 s). */
  timeoutMs?: number;
  onStdout?: (data: string) => void;
  onStderr?: (data: string) => void;
}

export interface E2BCommands {
  /** Rejects with a `CommandExitError` on a non-zero exit, like the SDK. */
  run(cmd: string, opts?: E2BCommandOptions & { background?: false }): Promise<E2BCommandResult>;
  /** Starts the command and resolves at once; `stdin: true` keeps its input open. */
  run(
    cmd: string,
    opts: E2BCommandOptions & { background: true; stdin?: boolean },
  ): Promise<E2BCommandHandle>;
  sendStdin(pid: number, data: string | Uint8Array): Promise<void>;
  closeStdin(pid: number): Promise<void>;
  /** SIGKILL (the only signal the SDK sends); `false` when no such process. */
  kill(pid: number): Promise<boolean>;
  /** Running commands and PTY sessions, of every client of the VM. */
  list(): Promise<E2BProcessInfo[]>;
  /** Follows a running command by pid (from now on; earlier output is not replayed). */
  connect(pid: number, opts?: E2BCommandConnectOptions): Promise<E2BCommandHandle>;
}

export type E2BFileType = 'file' | 'dir' | 'symlink';

/** `EntryInfo` subset. */
export interface E2BEntryInfo {
  name: string;
  path: string;
  type?: E2BFileType;
  size: number;
  symlinkTarget?: string;
}

export type E2BWriteData = string | ArrayBuffer | Blob | ReadableStream<Uint8Array>;

export interface E2BFiles {
  read(path: string, opts?: { format?: 'text' }): Promise<string>;
  read(path: string, opts: { format: 'bytes' }): Promise<Uint8Array>;
  read(path: string, opts: { format: 'stream' }): Promise<ReadableStream<Uint8Array>>;
  /** Creates parent directories. */
  write(path: string, data: E2BWriteData): Promise<unknown>;
  /** `true` created, `false` existed. */
  makeDir(path: string): Promise<boolean>;
  remove(path: string): Promise<void>;
  getInfo(path: string): Promise<E2BEntryInfo>;
}

/** A connected VM (`Sandbox` instance). */
export interface E2BRemoteSandbox {
  readonly sandboxId: string;
  readonly commands: E2BCommands;
  readonly files: E2BFiles;
  setTimeout(timeoutMs: number): Promise<void>;
  /** `true` killed, `false` not found. */
  kill(): Promise<boolean>;
  /**
   * Releases client resources. The SDK is stateless HTTP and has nothing to close; the port keeps
   * the call so accounting (and tests) can see when a handle is given up.
   */
  close(): Promise<void>;
}

/** Static `Sandbox` API with connection options bound. */
export interface E2BClient {
  create(opts: E2BCreateOptions): Promise<E2BRemoteSandbox>;
  /** Resumes a paused VM; `SandboxNotFoundError` for a dead or unknown id. */
  connect(sandboxId: string, opts?: E2BConnectOptions): Promise<E2BRemoteSandbox>;
  /**
   * `Sandbox.pause(id)` (memory kept): `true` paused, `false` already paused;
   * `SandboxNotFoundError` for a dead or unknown id. Until a `connect` resumes it, every call
   * through a connection of the VM fails.
   */
  pause(sandboxId: string, opts?: E2BPauseOptions): Promise<boolean>;
  list(opts?: E2BListOptions): E2BPaginator;
}
