/**
 * The slice of the BoxLite runtime the provider uses. The provider never touches the SDK directly:
 * it talks to this port, implemented over `@boxlite-ai/boxlite` by `createSdkBoxliteRuntime` and,
 * in tests, by an in-memory fake. Keeping the port this small is what lets the lifecycle and race
 * suites run on machines without KVM.
 */

export interface BoxliteExecResult {
  /** Exit status of the command; a non-zero status is a result, never an exception. */
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface BoxliteExecOptions {
  /** Wall-clock limit the runtime enforces inside the VM (whole seconds). */
  timeoutSecs?: number;
  cwd?: string;
  /**
   * Fires when the caller stopped waiting (deadline or abort). Implementations should kill the
   * execution; the provider does not wait for that to finish.
   */
  signal?: AbortSignal;
}

export interface BoxliteStartOptions {
  /** Wall-clock limit the runtime enforces inside the VM (whole seconds); absent: none. */
  timeoutSecs?: number;
  cwd?: string;
  /** Output as the VM produces it, chunk by chunk. */
  onStdout(text: string): void;
  onStderr(text: string): void;
}

/** How a started execution ended, once both of its streams were read to their end. */
export interface BoxliteExecutionEnd {
  readonly exitCode: number;
  /** The runtime's own account of a failure (not the command's stderr). */
  readonly errorMessage?: string;
}

/** One execution in the VM (the SDK's `Execution`): streaming, with input and signals. */
export interface BoxliteExecution {
  /** Rejects when the VM's transport fails before the command's end is known. */
  readonly ended: Promise<BoxliteExecutionEnd>;
  write(data: Uint8Array | string): Promise<void>;
  closeStdin(): Promise<void>;
  /** SIGKILL. */
  kill(): Promise<void>;
  /** Any other signal, by number. */
  signal(signal: number): Promise<void>;
}

/** One running micro-VM. */
export interface BoxliteBoxHandle {
  readonly name: string;
  exec(
    command: string,
    args: readonly string[],
    env: Readonly<Record<string, string>> | undefined,
    options?: BoxliteExecOptions,
  ): Promise<BoxliteExecResult>;
  /**
   * Starts a command and resolves once it runs: its output streams to the listeners, it takes
   * input until `closeStdin`, and it is signalled by the caller. The agent's commands run this way.
   */
  start(
    command: string,
    args: readonly string[],
    env: Readonly<Record<string, string>> | undefined,
    options: BoxliteStartOptions,
  ): Promise<BoxliteExecution>;
  /** Stops the VM (and removes it when it was created with auto-remove). */
  stop(): Promise<void>;
}

/** What the provider asks for when it creates a box. */
export interface BoxliteBoxSpec {
  readonly name: string;
  readonly image?: string | undefined;
  /** A local OCI layout directory used instead of `image` (offline hosts). */
  readonly rootfsPath?: string | undefined;
  readonly memoryMib?: number | undefined;
  readonly cpus?: number | undefined;
  readonly diskSizeGb?: number | undefined;
}

export interface BoxliteBoxSummary {
  readonly id: string;
  readonly name: string | undefined;
  readonly running: boolean;
  /** The runtime's word for the box state (`running`, `stopped`, ...), when it gives one. */
  readonly status?: string | undefined;
  /** ISO 8601 times the runtime reports, when it does. */
  readonly createdAt?: string | undefined;
  readonly startedAt?: string | undefined;
}

export interface BoxliteRuntime {
  /** Creates the box; it is usable (exec) once this resolves. Names are unique per runtime. */
  create(spec: BoxliteBoxSpec): Promise<BoxliteBoxHandle>;
  /** Every box the runtime knows, including ones other processes created. Reads only. */
  list(): Promise<BoxliteBoxSummary[]>;
  /** A handle of an existing box, by name; `undefined` when there is none. */
  get(name: string): Promise<BoxliteBoxHandle | undefined>;
  /** Releases the runtime. Boxes still running are the caller's business. Idempotent. */
  close(): Promise<void>;
}
