import {
  RemoteShellSandbox,
  assertCommandText,
  assertDownloadablePath,
  assertExecSupported,
  guardedListener,
  pacedTextListener,
  decodeFileText,
  collectBoundedBytes,
} from '@sbx/core/provider-kit';
import { posix } from 'node:path';
import {
  InvalidArgumentError,
  SandboxFileError,
  SandboxRuntimeError,
  isSbxError,
  DEFAULT_COMMAND_TIMEOUT_SECONDS,
  silentLogger,
  sliceLines,
  systemClock,
  validateExtraEnv,
} from '@sbx/core';
import type {
  Clock,
  ExecOptions,
  ExecResult,
  Logger,
  SandboxCapabilities,
  ReadFileOptions,
  WriteFileOptions,
} from '@sbx/core';
import { exitCodeOf, joinOutputLines, missingExitDetail, stdoutOf } from './command-output.js';
import { DEFAULT_SANDBOX_LIFETIME_SECONDS } from './opensandbox-config.js';
import { RemoteLifetime } from './opensandbox-lifetime.js';
import type { OpenSandboxRemote } from './opensandbox-sdk.js';
import { fileErrorFromRemote, tooLargeError } from './file-errors.js';
import { KeyedLock } from './keyed-lock.js';
import { checkRemotePath } from './remote-path.js';
import type { RemoteOperation } from './terminal-errors.js';
import { abortError, runRemoteCommand } from './opensandbox-command-run.js';
import type { RemoteCommandRun, RunOutcome } from './opensandbox-command-run.js';
import { describeRemoteError, isTerminalRemoteError } from './terminal-errors.js';

import {
  MAX_DOWNLOAD_BYTES,
  SANDBOX_CLOSED_MESSAGE,
  WRITE_FILE_MODE,
} from './opensandbox-sandbox-options.js';
import type {
  OpenSandboxSandboxOptions,
  ProbeResult,
  TerminalFailureListener,
} from './opensandbox-sandbox-options.js';

const encoder = new TextEncoder();

/** execd streams output; it has no standard input, and background commands are not mapped. */
const STREAMING_ONLY: SandboxCapabilities = Object.freeze({
  streaming: true,
  stdin: false,
  backgroundProcesses: false,
});

/**
 * A `Sandbox` over one OpenSandbox remote, through the SDK's execd transport.
 *
 * - Commands run through `commands.run` (execd streams the output over SSE) with the caller's
 *   limit, or `bash_command_timeout`, enforced by execd; sbx stops waiting 30 s after that. Output
 *   follows the core contract (`Std Error:` header, `Exit Code: N`, timeout notice); a run that
 *   reports no exit code raises instead of passing for success.
 * - Files use execd's file API (byte-exact upload and download, mode 644); an append is a
 *   serialised read-modify-write. `listDir`, `glob` and `grep` run the shared remote search
 *   commands of `@sbx/core` and parse them exactly like the local walkers.
 * - Lifetime: every operation renews the remote's expiry before it runs (commands for their own
 *   limit plus 30 s when that is longer than the lifetime), never to less than already granted
 *   (see `RemoteLifetime`). Explicit-cleanup mode never renews.
 * - A failure that means the remote is gone (see `isTerminalRemoteError`) closes this adapter and
 *   tells the provider, which evicts and deletes the remote; the next acquire creates a new one.
 *   A missing file (404 from the file API) is only a missing file.
 *
 * One concept: the mapping of the `Sandbox` operations onto one remote, with the renewal before
 * each and the one failure classification that closes the adapter; the lifetime bookkeeping, the
 * command run under its deadline and the file error mapping live in their own files.
 */
export class OpenSandboxSandbox extends RemoteShellSandbox {
  readonly remote: OpenSandboxRemote;
  readonly #environment: Readonly<Record<string, string>>;
  readonly #lifetime: RemoteLifetime;
  readonly #commandTimeoutSeconds: number;
  readonly #maxDownloadBytes: number;
  readonly #onTerminalFailure: TerminalFailureListener | undefined;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #writes = new KeyedLock();
  #closed = false;
  #destroying: Promise<void> | undefined;
  #transportClosed: Promise<void> | undefined;

  /** `id` is the sbx sandbox id; the remote's own id is `remoteId`. */
  constructor(id: string, options: OpenSandboxSandboxOptions) {
    super(id);
    this.remote = options.remote;
    this.#environment = { ...(options.environment ?? {}) };
    this.#commandTimeoutSeconds = options.commandTimeoutSeconds ?? DEFAULT_COMMAND_TIMEOUT_SECONDS;
    this.#maxDownloadBytes = options.maxDownloadBytes ?? MAX_DOWNLOAD_BYTES;
    this.#onTerminalFailure = options.onTerminalFailure;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
    this.#lifetime = new RemoteLifetime({
      lifetimeSeconds:
        options.lifetimeSeconds === undefined
          ? DEFAULT_SANDBOX_LIFETIME_SECONDS
          : options.lifetimeSeconds,
      renew: (seconds) => this.remote.renew(seconds),
      assertOpen: () => this.#assertOpen(),
      failure: (error) => this.#failure(error, 'renew', 'renew the sandbox lifetime'),
      clock: this.#clock,
    });
  }

  /** The server-assigned id of the remote sandbox. */
  get remoteId(): string {
    return this.remote.id;
  }

  /** True once the remote was found gone, deleted, or the transport closed; later calls fail fast. */
  get closed(): boolean {
    return this.#closed;
  }

  /** `null` in explicit-cleanup mode. */
  get lifetimeSeconds(): number | null {
    return this.#lifetime.seconds;
  }

  /** The expiry granted so far (clock milliseconds); `undefined` in explicit-cleanup mode. */
  get expiresAt(): number | undefined {
    return this.#lifetime.expiresAt;
  }

  /**
   * Renews the remote for another lifetime (never less than already granted). Used when an active
   * sandbox is handed out again: the renewal doubles as proof that the remote still exists. A
   * terminal failure closes this adapter (and tells the provider) before it is thrown.
   */
  renewLifetime(): Promise<void> {
    return this.#lifetime.renew();
  }

  /**
   * Runs `true` with `timeoutSeconds` enforced by execd and by this wait; healthy means exit code
   * exactly 0. Never throws, does not renew.
   */
  async healthCheck(timeoutSeconds: number): Promise<boolean> {
    if (this.#closed) return false;
    try {
      const result = await this.probe('true', timeoutSeconds);
      if (result.exitCode === 0) return true;
      this.#logger.warn('OpenSandbox health check failed', {
        sandboxId: this.id,
        remoteId: this.remoteId,
        detail: result.detail,
      });
      return false;
    } catch (error) {
      this.#logger.warn('OpenSandbox health check failed', {
        sandboxId: this.id,
        remoteId: this.remoteId,
        error: describeRemoteError(error),
      });
      return false;
    }
  }

  /** One command with the static environment and no renewal; transport failures are thrown. */
  async probe(command: string, timeoutSeconds: number): Promise<ProbeResult> {
    this.#assertOpen();
    const { execution, timedOut } = await this.#run(command, timeoutSeconds, this.#environment);
    if (timedOut) return { exitCode: null, detail: `timed out after ${timeoutSeconds} seconds` };
    const exitCode = exitCodeOf(execution);
    return {
      exitCode,
      detail: exitCode === null ? missingExitDetail(execution) : `exit code ${exitCode}`,
    };
  }

  override get capabilities(): SandboxCapabilities {
    return STREAMING_ONLY;
  }

  /**
   * execd streams a command's output over SSE, one event per line: each line reaches the
   * listeners as execd sends it (with its line end). execd has no standard input.
   */
  override async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    validateExtraEnv(options.env);
    const timeoutSeconds = this.#commandTimeout(options.timeoutMs);
    assertCommandText(command);
    assertExecSupported(this.capabilities, options);
    if (options.cwd !== undefined) checkRemotePath(options.cwd);
    if (options.signal?.aborted) throw abortError(options.signal);
    this.#assertOpen();
    const started = performance.now();
    await this.#lifetime.renewForCommand(timeoutSeconds);
    const envs = { ...this.#environment, ...(options.env ?? {}) };
    const toLine = (message: { text: string }) =>
      message.text.endsWith('\n') ? message.text : `${message.text}\n`;
    // The SDK's callbacks cannot be paused: listeners get the output at the shared pacer's pace
    // (decoding and masking bounded per turn of the loop), all of it before the call returns.
    const out = pacedTextListener(guardedListener(options.onStdout, this.#logger, this.id));
    const err = pacedTextListener(guardedListener(options.onStderr, this.#logger, this.id));
    const toStdout = out.listener;
    const toStderr = err.listener;
    let run: RunOutcome;
    try {
      run = await this.#run(command, timeoutSeconds, envs, options.signal, {
        cwd: options.cwd,
        handlers: {
          ...(toStdout ? { onStdout: (m: { text: string }) => toStdout(toLine(m)) } : {}),
          ...(toStderr ? { onStderr: (m: { text: string }) => toStderr(toLine(m)) } : {}),
        },
      });
    } finally {
      await Promise.all([out.finish(), err.finish()]);
    }
    const { execution, timedOut } = run;
    const stdout = stdoutOf(execution);
    const stderr = joinOutputLines(execution.logs.stderr);
    const base = {
      stdout,
      stderr,
      durationMs: performance.now() - started,
      truncated: false,
      timeoutMs: timeoutSeconds * 1000,
    };
    if (timedOut) return { ...base, exitCode: null, timedOut: true };
    const exitCode = exitCodeOf(execution);
    if (exitCode === null) {
      throw new SandboxRuntimeError(
        `OpenSandbox command completed without an exit code: ${missingExitDetail(execution)}`,
      );
    }
    return { ...base, exitCode, timedOut: false };
  }

  override async readFile(path: string, options: ReadFileOptions = {}): Promise<string> {
    checkRemotePath(path);
    this.#assertOpen();
    await this.#lifetime.renew();
    const bytes = await this.#readBytes(path, 'read');
    return sliceLines(decodeFileText(bytes, path), options);
  }

  override async downloadFile(path: string): Promise<Uint8Array> {
    checkRemotePath(path);
    assertDownloadablePath(path);
    this.#assertOpen();
    await this.#lifetime.renew();
    const limit = this.#maxDownloadBytes;
    try {
      return await collectBoundedBytes(this.remote.files.readBytesStream(path), {
        limit,
        tooLarge: () => tooLargeError(path, limit),
        onCloseError: (error) =>
          this.#logger.warn('Closing an OpenSandbox download stream failed', {
            sandboxId: this.id,
            path,
            error: describeRemoteError(error),
          }),
      });
    } catch (error) {
      if (isSbxError(error)) throw error;
      throw this.#fileFailure(error, path, 'download');
    }
  }

  override async writeFile(
    path: string,
    content: string,
    options: WriteFileOptions = {},
  ): Promise<void> {
    checkRemotePath(path);
    this.#assertOpen();
    await this.#lifetime.renew();
    const append = options.append ?? false;
    await this.#writes.run(posix.normalize(path), async () => {
      let data: Uint8Array = encoder.encode(content);
      if (append) {
        const existing = await this.#readExisting(path);
        data = Buffer.concat([existing, data]);
      }
      await this.#writeBytes(path, data, 'write');
    });
  }

  override async updateFile(path: string, content: Uint8Array): Promise<void> {
    checkRemotePath(path);
    this.#assertOpen();
    await this.#lifetime.renew();
    await this.#writes.run(posix.normalize(path), () => this.#writeBytes(path, content, 'update'));
  }

  /**
   * Deletes the remote and closes its transport. Marks the adapter closed first, even when the
   * delete fails, so nothing new starts on a sandbox that is going away. A remote that is already
   * gone (404, 410, unreachable) counts as deleted; other failures are thrown and a later call
   * retries. Concurrent and repeated calls share one delete, so each remote is deleted once.
   */
  destroy(): Promise<void> {
    this.#closed = true;
    this.#destroying ??= this.#kill().catch((error: unknown) => {
      this.#destroying = undefined;
      throw error;
    });
    return this.#destroying;
  }

  /** Closes the transport without deleting the remote. Idempotent; the adapter is closed after. */
  override async close(): Promise<void> {
    this.#closed = true;
    await this.#closeTransport();
  }

  // -------------------------------------------------------------------------------------------

  #assertOpen(): void {
    // A closed adapter is an expected state (evicted, shut down), not an incident: no error log.
    if (this.#closed) throw new SandboxRuntimeError(SANDBOX_CLOSED_MESSAGE);
  }

  #commandTimeout(timeoutMs: number | undefined): number {
    if (timeoutMs === undefined) return this.#commandTimeoutSeconds;
    if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0) {
      throw new InvalidArgumentError(`timeout must be positive, got ${timeoutMs} ms`);
    }
    return timeoutMs / 1000;
  }

  /** One `commands.run` under its deadline (see `runRemoteCommand`). */
  #run(
    command: string,
    timeoutSeconds: number,
    envs: Readonly<Record<string, string>>,
    signal?: AbortSignal,
    extra: Pick<RemoteCommandRun, 'cwd' | 'handlers'> = {},
  ): Promise<RunOutcome> {
    return runRemoteCommand(
      {
        remote: this.remote,
        clock: this.#clock,
        logger: this.#logger,
        ids: { sandboxId: this.id, remoteId: this.remoteId },
        failure: (error) => this.#failure(error, 'command', 'run the command'),
      },
      { command, timeoutSeconds, envs, signal, ...extra },
    );
  }

  /** Paths are the remote's own; they are checked by the OpenSandbox path rules. */
  protected override checkPath(path: string): void {
    checkRemotePath(path);
  }

  protected async runSearch(command: string): Promise<string> {
    this.#assertOpen();
    const timeoutSeconds = this.#commandTimeoutSeconds;
    await this.#lifetime.renewForCommand(timeoutSeconds);
    const { execution, timedOut } = await this.#run(command, timeoutSeconds, this.#environment);
    if (timedOut) {
      throw new SandboxRuntimeError(`OpenSandbox search timed out after ${timeoutSeconds} seconds`);
    }
    if (exitCodeOf(execution) === null) {
      throw new SandboxRuntimeError(
        `OpenSandbox command completed without an exit code: ${missingExitDetail(execution)}`,
      );
    }
    return joinOutputLines(execution.logs.stdout);
  }

  async #readBytes(path: string, operation: string): Promise<Uint8Array> {
    try {
      return await this.remote.files.readBytes(path);
    } catch (error) {
      throw this.#fileFailure(error, path, operation);
    }
  }

  /** The current bytes of `path` for an append; a missing file is empty. */
  async #readExisting(path: string): Promise<Uint8Array> {
    try {
      return await this.#readBytes(path, 'append');
    } catch (error) {
      if (error instanceof SandboxFileError && error.kind === 'ENOENT') return new Uint8Array(0);
      throw error;
    }
  }

  async #writeBytes(path: string, data: Uint8Array, operation: string): Promise<void> {
    try {
      await this.remote.files.writeFiles([{ path, data, mode: WRITE_FILE_MODE }]);
    } catch (error) {
      throw this.#fileFailure(error, path, operation);
    }
  }

  #fileFailure(error: unknown, path: string, operation: string): Error {
    if (isTerminalRemoteError(error, 'file')) {
      return this.#failure(error, 'file', `${operation} ${path}`);
    }
    return fileErrorFromRemote(error, path, operation);
  }

  /** Wraps an SDK failure; a terminal one closes the adapter and tells the provider first. */
  #failure(error: unknown, operation: RemoteOperation, action: string): Error {
    if (isSbxError(error)) return error;
    const message = describeRemoteError(error);
    if (isTerminalRemoteError(error, operation)) {
      this.#invalidate(error, operation);
      return new SandboxRuntimeError(
        `OpenSandbox sandbox ${this.remoteId} is gone (could not ${action}: ${message})`,
        { cause: error },
      );
    }
    return new SandboxRuntimeError(`OpenSandbox could not ${action}: ${message}`, {
      cause: error,
    });
  }

  #invalidate(error: unknown, operation: RemoteOperation): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#logger.warn('OpenSandbox sandbox is gone; evicting it', {
      sandboxId: this.id,
      remoteId: this.remoteId,
      operation,
      error: describeRemoteError(error),
    });
    try {
      this.#onTerminalFailure?.(this, error);
    } catch (listenerError) {
      this.#logger.error('OpenSandbox eviction listener failed', {
        sandboxId: this.id,
        error: listenerError,
      });
    }
  }

  async #kill(): Promise<void> {
    try {
      await this.remote.kill();
    } catch (error) {
      if (!isTerminalRemoteError(error, 'kill')) {
        // The transport stays open: the delete must be retryable.
        throw new SandboxRuntimeError(
          `OpenSandbox could not delete sandbox ${this.remoteId}: ${describeRemoteError(error)}`,
          { cause: error },
        );
      }
      this.#logger.info('OpenSandbox sandbox was already gone', {
        sandboxId: this.id,
        remoteId: this.remoteId,
        error: describeRemoteError(error),
      });
    }
    await this.#closeTransport();
  }

  #closeTransport(): Promise<void> {
    this.#transportClosed ??= this.remote.close().catch((error: unknown) => {
      this.#logger.warn('Closing the OpenSandbox transport failed', {
        sandboxId: this.id,
        remoteId: this.remoteId,
        error: describeRemoteError(error),
      });
    });
    return this.#transportClosed;
  }
}
