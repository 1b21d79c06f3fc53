import {
  AcquireSerializer,
  ProcessTable,
  RemoteShellSandbox,
  execViaLauncher,
  assertCommandText,
  assertDownloadablePath,
  assertExecSupported,
  killedAtLimit,
  oneShotExecResult,
  assertSandboxFilePath,
  boundedHealthCheck,
  decodeFileText,
  collectBoundedBytes,
} from '@sbx/core/provider-kit';
import { posix } from 'node:path';
import {
  FULL_PROCESS_CAPABILITIES,
  ONE_SHOT_CAPABILITIES,
  errorMessage,
  SandboxFileError,
  SandboxRuntimeError,
  isSbxError,
  silentLogger,
  sliceLines,
  systemClock,
  validateExtraEnv,
  withDeadline,
} from '@sbx/core';
import { VIRTUAL_PATH_PREFIX, isUnderVirtualPrefix } from '@sbx/core/internal';
import type {
  Clock,
  ExecOptions,
  ExecResult,
  Logger,
  ReadFileOptions,
  SandboxCapabilities,
  SandboxProcesses,
  WriteFileOptions,
} from '@sbx/core';
import type { TenkiExecResult, TenkiRemoteSandbox } from './tenki-client.js';
import { TenkiProcessLauncher } from './tenki-processes.js';
import { isTerminalTenkiError, tenkiFileProblem } from './tenki-errors.js';
import { fileErrorFromTenki } from './tenki-file-errors.js';
import {
  COMMAND_DEADLINE_GRACE_MS,
  MAX_DOWNLOAD_BYTES,
  SANDBOX_CLOSED_MESSAGE,
  STREAM_CHUNK_BYTES,
} from './tenki-sandbox-options.js';
import type { TenkiSandboxOptions, TenkiTerminalListener } from './tenki-sandbox-options.js';

const lenientDecoder = new TextDecoder('utf-8');
const encoder = new TextEncoder();

function* frames(bytes: Uint8Array): Generator<Uint8Array> {
  if (bytes.length === 0) {
    yield bytes;
    return;
  }
  for (let at = 0; at < bytes.length; at += STREAM_CHUNK_BYTES) {
    yield bytes.subarray(at, at + STREAM_CHUNK_BYTES);
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/**
 * A `Sandbox` over one Tenki microVM.
 *
 * The VM runs as the unprivileged `tenki` user, so `/mnt/user-data[/x]` is served from
 * `<home>[/x]` for every file and search operation, and results are mapped back, so what
 * `listDir`/`glob`/`grep` return feeds straight into the file calls. (Shell commands see the
 * virtual path through the symlink the provider tries to create at bootstrap.)
 *
 * Files travel through Tenki's native file API (streamed, binary-safe); only searches shell out,
 * to the `find`/`grep` protocol of `@sbx/core`. Commands are never retried (they need not be
 * idempotent). A failure that means the session is gone is reported to the provider, which evicts
 * the microVM; other failures just fail the call.
 *
 * One concept: the mapping of the `Sandbox` operations onto one microVM, with its path mapping and
 * the session-gone report they all share; the options and limits, the file error mapping and the
 * live process launcher live in the files named for them.
 */
export class TenkiSandbox extends RemoteShellSandbox {
  readonly remote: TenkiRemoteSandbox;
  readonly homeDir: string;
  readonly #environment: Readonly<Record<string, string>>;
  readonly #commandTimeoutSeconds: number | undefined;
  readonly #onTerminalFailure: TenkiTerminalListener | undefined;
  readonly #clock: Clock;
  readonly #logger: Logger;
  /** Appends are read-modify-write (no native append): one at a time per file. */
  readonly #appends = new AcquireSerializer({ name: 'tenki-append' });
  /** Present when the client can start live commands (`TenkiRemoteSandbox.start`). */
  readonly #launcher: TenkiProcessLauncher | undefined;
  readonly #processes: ProcessTable | undefined;
  #closed = false;
  #terminated = false;
  #terminating: Promise<void> | undefined;

  constructor(id: string, options: TenkiSandboxOptions) {
    super(id);
    this.remote = options.remote;
    this.homeDir = (options.homeDir ?? '/home/tenki').replace(/(.)\/+$/, '$1');
    this.#environment = { ...(options.environment ?? {}) };
    this.#commandTimeoutSeconds = options.commandTimeoutSeconds;
    this.#onTerminalFailure = options.onTerminalFailure;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
    if (typeof this.remote.start === 'function') {
      this.#launcher = new TenkiProcessLauncher({
        remote: this.remote,
        assertOpen: () => this.#assertOpen(),
        environment: () => this.#environment,
        script: (command, cwd) => this.commandInCwd(command, cwd),
        failure: (error) => this.#failure(error),
        logger: this.#logger,
        sandboxId: id,
      });
      this.#processes = new ProcessTable({
        launcher: this.#launcher,
        stdin: true,
        clock: this.#clock,
        logger: this.#logger,
        sandboxId: id,
      });
    }
  }

  /** Full processes when the client starts live commands, else one-shot commands. */
  override get capabilities(): SandboxCapabilities {
    return this.#launcher ? FULL_PROCESS_CAPABILITIES : ONE_SHOT_CAPABILITIES;
  }

  override get processes(): SandboxProcesses {
    return this.#processes ?? super.processes;
  }

  /** Ends the background processes this adapter started; it stays usable (used at release). */
  async endProcesses(): Promise<void> {
    await this.#processes?.killRunning();
  }

  /** Kills the background processes this adapter started and refuses new ones. Idempotent. */
  override async close(): Promise<void> {
    await this.#processes?.close();
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The path inside the VM for a path the agent uses (`/mnt/user-data` → HOME). */
  resolvePath(path: string): string {
    if (!isUnderVirtualPrefix(path, VIRTUAL_PATH_PREFIX)) return path;
    return this.homeDir + path.slice(VIRTUAL_PATH_PREFIX.length);
  }

  /** The agent's path for a path inside the VM (HOME → `/mnt/user-data`). */
  virtualPath(path: string): string {
    if (!isUnderVirtualPrefix(path, this.homeDir)) return path;
    return VIRTUAL_PATH_PREFIX + path.slice(this.homeDir.length);
  }

  /** True once the microVM was terminated (or found already gone). */
  get terminated(): boolean {
    return this.#terminated;
  }

  /**
   * Terminates the microVM. Idempotent. Done only once that succeeded, or the session turned out
   * to be gone already; any other failure is thrown and leaves the adapter as it was (usable, if
   * it was), so termination can be retried.
   */
  terminate(): Promise<void> {
    if (this.#terminated) return Promise.resolve();
    this.#terminating ??= this.remote.close().then(
      () => this.#markTerminated(),
      (error: unknown) => {
        this.#terminating = undefined;
        if (!isTerminalTenkiError(error)) throw error;
        this.#markTerminated();
      },
    );
    return this.#terminating;
  }

  #markTerminated(): void {
    this.#terminated = true;
    this.markClosed();
  }

  /** Marks the adapter closed without a remote call (the VM is gone or no longer ours). */
  markClosed(): void {
    this.#closed = true;
    this.#appends.close();
  }

  /** `echo ok` bounded by `timeoutSeconds` inside the VM and for this wait. Never throws. */
  async healthCheck(timeoutSeconds: number): Promise<boolean> {
    if (this.#closed) return false;
    return boundedHealthCheck(
      async (signal) => {
        const result = await this.remote.exec(['sh', '-c', 'echo ok'], { timeoutSeconds, signal });
        return (result.exitCode ?? 0) === 0 && lenientDecoder.decode(result.stdout).includes('ok');
      },
      {
        timeoutSeconds,
        clock: this.#clock,
        logger: this.#logger,
        name: 'Tenki liveness check',
        sandboxId: this.id,
      },
    );
  }

  /**
   * With a client that starts live commands: streamed, with input, the limit (the call's, else
   * `command_timeout_seconds`) enforced here and given to the service as well. Otherwise Tenki's
   * exec returns a command's output when it has ended: listeners are called once, at the end
   * (`capabilities.streaming` is false), and there is no input.
   */
  override async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    assertCommandText(command);
    assertExecSupported(this.capabilities, options);
    validateExtraEnv(options.env);
    this.#assertOpen();
    if (this.#launcher) {
      const limitMs =
        options.timeoutMs ??
        (this.#commandTimeoutSeconds === undefined
          ? undefined
          : this.#commandTimeoutSeconds * 1000);
      return execViaLauncher(this.#launcher, command, options, {
        timeoutMs: limitMs,
        clock: this.#clock,
        logger: this.#logger,
        sandboxId: this.id,
      });
    }
    const started = performance.now();
    const env = { ...this.#environment, ...(options.env ?? {}) };
    const timeoutSeconds =
      options.timeoutMs !== undefined ? options.timeoutMs / 1000 : this.#commandTimeoutSeconds;
    const script = this.commandInCwd(command, options.cwd);
    const result = await this.#exec(['sh', '-lc', script], env, timeoutSeconds, options.signal);
    const timeoutMs = timeoutSeconds === undefined ? undefined : timeoutSeconds * 1000;
    return oneShotExecResult(
      result === undefined
        ? { stdout: '', stderr: '', exitCode: null, timedOut: true, timeoutMs }
        : {
            stdout: lenientDecoder.decode(result.stdout),
            stderr: lenientDecoder.decode(result.stderr),
            exitCode: result.exitCode ?? 0,
            timedOut: killedAtLimit(result.exitCode, performance.now() - started, timeoutMs),
            timeoutMs,
          },
      options,
      started,
      (error) =>
        this.#logger.warn('a command output listener threw', {
          sandboxId: this.id,
          error: errorMessage(error),
        }),
    );
  }

  override async readFile(path: string, options: ReadFileOptions = {}): Promise<string> {
    assertSandboxFilePath(path);
    this.#assertOpen();
    const remotePath = this.resolvePath(path);
    let bytes: Uint8Array;
    try {
      bytes = await this.remote.fs.readBytes(remotePath);
    } catch (error) {
      throw this.#fileError(error, path, 'read');
    }
    return sliceLines(decodeFileText(bytes, path), options);
  }

  /**
   * Streams the file and counts what actually arrives: the cap holds even when a size reported
   * up front would be stale or wrong. Over the cap is the caller's problem (EFBIG), not the VM's.
   */
  override async downloadFile(path: string): Promise<Uint8Array> {
    assertSandboxFilePath(path);
    assertDownloadablePath(path);
    this.#assertOpen();
    try {
      return await collectBoundedBytes(this.remote.fs.readStream(this.resolvePath(path)), {
        limit: MAX_DOWNLOAD_BYTES,
        tooLarge: () =>
          new SandboxFileError(`File too large: ${path} exceeds ${MAX_DOWNLOAD_BYTES} bytes`, {
            path,
            operation: 'download',
            kind: 'EFBIG',
          }),
        onCloseError: (error) =>
          this.#logger.warn('Closing a Tenki download stream failed', {
            sandboxId: this.id,
            path,
            error: errorMessage(error),
          }),
      });
    } catch (error) {
      if (isSbxError(error)) throw error;
      throw this.#fileError(error, path, 'download');
    }
  }

  override async writeFile(
    path: string,
    content: string,
    options: WriteFileOptions = {},
  ): Promise<void> {
    assertSandboxFilePath(path);
    const bytes = encoder.encode(content);
    if (!options.append) {
      await this.#write(path, bytes, 'write');
      return;
    }
    this.#assertOpen();
    await this.#appends.hold(this.resolvePath(path), async () => {
      let existing: Uint8Array;
      try {
        await this.#mkdirParent(path, 'write');
        existing = await this.remote.fs.readBytes(this.resolvePath(path));
      } catch (error) {
        if (isSbxError(error)) throw error;
        if (tenkiFileProblem(error) !== 'missing') throw this.#fileError(error, path, 'write');
        existing = new Uint8Array(0);
      }
      await this.#write(path, concat(existing, bytes), 'write');
    });
  }

  override async updateFile(path: string, content: Uint8Array): Promise<void> {
    assertSandboxFilePath(path);
    await this.#write(path, content, 'update');
  }

  #assertOpen(): void {
    // Closed is an expected state (evicted, shut down): reported to the caller, not logged.
    if (this.#closed) throw new SandboxRuntimeError(SANDBOX_CLOSED_MESSAGE);
  }

  /** Reports a session-ending failure to the provider (once per adapter). */
  #terminal(error: unknown): void {
    if (this.#closed) return;
    this.#logger.warn('Tenki session is gone; evicting the sandbox', {
      sandboxId: this.id,
      error: errorMessage(error),
    });
    this.markClosed();
    this.#onTerminalFailure?.(this, error);
  }

  /** One exec, never retried; `undefined` when sbx stopped waiting at the deadline. */
  async #exec(
    argv: readonly string[],
    env: Readonly<Record<string, string>>,
    timeoutSeconds: number | undefined,
    signal?: AbortSignal,
  ): Promise<TenkiExecResult | undefined> {
    this.#assertOpen();
    const controller = new AbortController();
    try {
      const outcome = await withDeadline(
        this.remote.exec(argv, {
          env,
          signal: controller.signal,
          ...(timeoutSeconds === undefined ? {} : { timeoutSeconds }),
        }),
        {
          clock: this.#clock,
          ms:
            timeoutSeconds === undefined
              ? undefined
              : timeoutSeconds * 1000 + COMMAND_DEADLINE_GRACE_MS,
          signal,
          controller,
          logger: this.#logger,
          label: 'exec',
        },
      );
      return outcome.timedOut ? undefined : outcome.value;
    } catch (error) {
      throw this.#failure(error);
    }
  }

  /** The typed error of a client failure; one that ends the session is reported first. */
  #failure(error: unknown): Error {
    if (isSbxError(error)) return error;
    if (isTerminalTenkiError(error)) this.#terminal(error);
    return new SandboxRuntimeError(errorMessage(error), { cause: error });
  }

  #fileError(error: unknown, path: string, operation: string): Error {
    return fileErrorFromTenki(error, path, operation, (gone) => this.#terminal(gone));
  }

  async #mkdirParent(path: string, operation: string): Promise<void> {
    try {
      await this.remote.fs.mkdir(posix.dirname(this.resolvePath(path)), { recursive: true });
    } catch (error) {
      throw this.#fileError(error, path, operation);
    }
  }

  async #write(path: string, bytes: Uint8Array, operation: string): Promise<void> {
    this.#assertOpen();
    await this.#mkdirParent(path, operation);
    try {
      await this.remote.fs.writeStream(this.resolvePath(path), frames(bytes), { truncate: true });
    } catch (error) {
      throw this.#fileError(error, path, operation);
    }
  }

  protected override remotePath(path: string): string {
    return this.resolvePath(path);
  }

  protected override callerPath(remote: string): string {
    return this.virtualPath(remote);
  }

  protected async runSearch(command: string): Promise<string> {
    const result = await this.#exec(['sh', '-c', command], this.#environment, undefined);
    // Without a timeout there is no deadline; the check narrows the type.
    if (result === undefined) throw new SandboxRuntimeError('sandbox search timed out');
    return lenientDecoder.decode(result.stdout);
  }
}
