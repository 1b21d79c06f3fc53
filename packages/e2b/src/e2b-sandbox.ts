import {
  ProcessTable,
  RemoteShellSandbox,
  assertCommandText,
  assertExecSupported,
  execResultText,
  guardedListener,
  pacedTextListener,
} from '@sbx/core/provider-kit';
import { posix } from 'node:path';
import {
  InvalidArgumentError,
  SandboxFileError,
  SandboxFileNotFoundError,
  SandboxNotFoundError,
  SandboxPermissionError,
  SandboxRuntimeError,
  isSbxError,
  silentLogger,
  validateExtraEnv,
} from '@sbx/core';
import {
  PATH_TRAVERSAL_MESSAGE,
  VIRTUAL_PATH_PREFIX,
  hasTraversalSegment,
} from '@sbx/core/internal';
import type {
  ExecOptions,
  ExecResult,
  ExecuteCommandOptions,
  Logger,
  ReadFileOptions,
  SandboxCapabilities,
  SandboxProcesses,
  WriteFileOptions,
} from '@sbx/core';
import { AbortedError, FULL_PROCESS_CAPABILITIES } from '@sbx/core';
import { E2BProcessLauncher, runWithStdin } from './e2b-processes.js';
import type { E2BCommandOptions, E2BCommandResult, E2BRemoteSandbox } from './e2b-client.js';
import { SDK_DEFAULT_COMMAND_TIMEOUT_MS } from './e2b-client.js';
import {
  commandExitResult,
  errorMessage,
  isCommandTimeoutError,
  isFileNotFoundError,
  isInvalidArgumentError,
  isSandboxGoneError,
} from './e2b-errors.js';

/** Download cap of `downloadFile` (100 MiB). */
export const MAX_DOWNLOAD_BYTES = 100 * 1024 * 1024;
export const DEFAULT_E2B_HOME_DIR = '/home/user';

export const REAPED_MESSAGE =
  'Error: e2b sandbox has been reaped by the control plane (idle timeout or explicit pause). ' +
  'The provider will rebuild a fresh sandbox on the next tool call.';
export const CLOSED_MESSAGE = 'Error: sandbox client has been closed';

export interface E2BSandboxOptions {
  /** Directory inside the VM that backs `/mnt/user-data`. Default `/home/user`. */
  homeDir?: string;
  /** Command limit when a call gives none; default the SDK's 60 s. `0` disables it. */
  defaultCommandTimeoutMs?: number;
  logger?: Logger;
}

/**
 * `Sandbox` over one E2B VM. Agents address `/mnt/user-data/...`, which the adapter maps to the
 * VM's home directory for file calls (the bootstrap also links it inside the VM for shell use), and
 * search results come back under the virtual path the caller used.
 *
 * A VM the control plane no longer runs (see `isSandboxGoneError`) marks the adapter dead: later
 * commands answer at once without touching the SDK, and the provider replaces the sandbox on its
 * next acquire.
 */
export class E2BSandbox extends RemoteShellSandbox {
  readonly homeDir: string;
  readonly #logger: Logger;
  readonly #defaultTimeoutMs: number | undefined;
  #client: E2BRemoteSandbox | undefined;
  #dead = false;
  readonly #processes: ProcessTable;

  constructor(id: string, client: E2BRemoteSandbox, options: E2BSandboxOptions = {}) {
    super(id);
    this.#client = client;
    this.homeDir = (options.homeDir ?? DEFAULT_E2B_HOME_DIR).replace(/\/+$/, '') || '/';
    this.#logger = options.logger ?? silentLogger;
    this.#defaultTimeoutMs = options.defaultCommandTimeoutMs;
    this.#processes = new ProcessTable({
      launcher: new E2BProcessLauncher({
        client: () => this.#usable(),
        resolvePath: (path) => this.resolvePath(path),
        remoteError: (error, operation) => this.#remoteError(error, operation),
        logger: this.#logger,
      }),
      stdin: true,
      logger: this.#logger,
      sandboxId: id,
    });
  }

  /** The id the control plane knows (falls back to the sbx id when the client reports none). */
  get remoteId(): string {
    return this.#client?.sandboxId || this.id;
  }

  /** The VM handle; `undefined` once closed. */
  get client(): E2BRemoteSandbox | undefined {
    return this.#client;
  }

  get isDead(): boolean {
    return this.#dead;
  }

  get isClosed(): boolean {
    return this.#client === undefined;
  }

  markDead(): void {
    this.#dead = true;
  }

  /** Maps the virtual user-data prefix to the home directory; rejects traversal. */
  resolvePath(path: string): string {
    if (typeof path !== 'string' || path === '') throw new InvalidArgumentError('path is empty');
    if (hasTraversalSegment(path)) {
      throw new SandboxPermissionError(PATH_TRAVERSAL_MESSAGE, { path });
    }
    if (path === VIRTUAL_PATH_PREFIX) return this.homeDir;
    if (path.startsWith(`${VIRTUAL_PATH_PREFIX}/`)) {
      return posix.join(this.homeDir, path.slice(VIRTUAL_PATH_PREFIX.length + 1));
    }
    return path;
  }

  /** The inverse of `resolvePath` for paths the VM reports, when the caller used the virtual root. */
  #toCallerPath(physical: string, callerPath: string): string {
    if (!(callerPath === VIRTUAL_PATH_PREFIX || callerPath.startsWith(`${VIRTUAL_PATH_PREFIX}/`))) {
      return physical;
    }
    if (physical === this.homeDir) return VIRTUAL_PATH_PREFIX;
    const prefix = this.homeDir === '/' ? '/' : `${this.homeDir}/`;
    return physical.startsWith(prefix)
      ? `${VIRTUAL_PATH_PREFIX}/${physical.slice(prefix.length)}`
      : physical;
  }

  override get capabilities(): SandboxCapabilities {
    return FULL_PROCESS_CAPABILITIES;
  }

  override get processes(): SandboxProcesses {
    return this.#processes;
  }

  /**
   * The reference text. A closed client, a reaped VM and an SDK failure read as `Error: ...`
   * texts here (the reference's convention for this provider), where `exec` throws them typed.
   */
  override async executeCommand(
    command: string,
    options: ExecuteCommandOptions = {},
  ): Promise<string> {
    const outcome = await this.#run(command, options);
    return 'text' in outcome ? outcome.text : execResultText(outcome.result);
  }

  override async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    assertCommandText(command);
    assertExecSupported(this.capabilities, options);
    const outcome = await this.#run(command, options);
    if ('text' in outcome) {
      throw new SandboxRuntimeError(outcome.text.replace(/^Error: /, ''), {
        details: { sandbox_id: this.id },
      });
    }
    return outcome.result;
  }

  async #run(
    command: string,
    options: ExecOptions,
  ): Promise<{ result: ExecResult } | { text: string }> {
    // Validated before anything reaches the VM: a key can smuggle shell syntax into hosts that
    // splice env into a command line, and the contract is the same for every provider.
    validateExtraEnv(options.env);
    const client = this.#client;
    if (client === undefined) return { text: CLOSED_MESSAGE };
    if (this.#dead) return { text: REAPED_MESSAGE };
    const timeoutMs = options.timeoutMs ?? this.#defaultTimeoutMs;
    const limit = timeoutMs ?? SDK_DEFAULT_COMMAND_TIMEOUT_MS;
    const started = performance.now();
    let stdout = '';
    let stderr = '';
    const runOptions: E2BCommandOptions = {};
    // Only what the caller asked for: per-call env as `envs` (never spliced into the command
    // text, where it would be logged and visible in `ps`), and a limit only when one is set.
    if (options.env !== undefined) runOptions.envs = { ...options.env };
    if (options.cwd !== undefined) runOptions.cwd = this.resolvePath(options.cwd);
    if (timeoutMs !== undefined) runOptions.timeoutMs = timeoutMs;
    if (options.signal !== undefined) runOptions.signal = options.signal;
    const done = (parts: { stdout: string; stderr: string; exitCode: number | null }) => ({
      result: {
        ...parts,
        durationMs: performance.now() - started,
        truncated: false,
        timedOut: false,
        timeoutMs: limit,
      },
    });
    // The SDK's callbacks cannot be paused: listeners get the output at the shared pacer's pace
    // (decoding and masking bounded per turn of the loop), all of it before the call returns.
    const pacedOut = pacedTextListener(guardedListener(options.onStdout, this.#logger, this.id));
    const pacedErr = pacedTextListener(guardedListener(options.onStderr, this.#logger, this.id));
    const toStdout = pacedOut.listener;
    const toStderr = pacedErr.listener;
    runOptions.onStdout = (d) => {
      stdout += d;
      toStdout?.(d);
    };
    runOptions.onStderr = (d) => {
      stderr += d;
      toStderr?.(d);
    };
    try {
      try {
        const result =
          options.stdin === undefined
            ? await client.commands.run(command, runOptions)
            : await runWithStdin(client, command, runOptions, options.stdin);
        return done(result);
      } catch (error) {
        if (options.signal?.aborted) throw new AbortedError(undefined, { cause: error });
        const exited = commandExitResult(error);
        if (exited) return done(exited);
        if (isCommandTimeoutError(error)) {
          return {
            result: {
              stdout,
              stderr,
              exitCode: null,
              durationMs: performance.now() - started,
              truncated: false,
              timedOut: true,
              timeoutMs: limit,
            },
          };
        }
        if (isSandboxGoneError(error)) {
          this.#dead = true;
          this.#logger.warn('e2b sandbox is gone; marking it dead', {
            sandboxId: this.id,
            error: errorMessage(error),
          });
        }
        return { text: `Error: ${errorMessage(error)}` };
      }
    } finally {
      await Promise.all([pacedOut.finish(), pacedErr.finish()]);
    }
  }

  /**
   * Health check: `false` (and dead) only when the VM is gone; unknown failures count as alive, so
   * a network blip never throws away a healthy VM.
   */
  async ping(): Promise<boolean> {
    const client = this.#client;
    if (client === undefined || this.#dead) return false;
    try {
      await client.commands.run('true', { timeoutMs: 10_000 });
      return true;
    } catch (error) {
      if (commandExitResult(error)) return true;
      if (isSandboxGoneError(error)) {
        this.#dead = true;
        return false;
      }
      return true;
    }
  }

  async readFile(path: string, options: ReadFileOptions = {}): Promise<string> {
    const resolved = this.resolvePath(path);
    const client = this.#usable();
    let text: string;
    try {
      text = await client.files.read(resolved);
    } catch (error) {
      throw this.#fileError(error, path, 'read');
    }
    if (options.startLine === undefined && options.endLine === undefined) return text;
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    const start = Math.max(options.startLine ?? 1, 1);
    const end = options.endLine ?? lines.length;
    return lines
      .slice(start - 1, Math.max(end, start - 1))
      .map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l))
      .join('\n');
  }

  async writeFile(path: string, content: string, options: WriteFileOptions = {}): Promise<void> {
    const resolved = this.resolvePath(path);
    const client = this.#usable();
    let data = content;
    if (options.append) {
      let existing = '';
      try {
        existing = await client.files.read(resolved);
      } catch (error) {
        if (!isFileNotFoundError(error)) throw this.#fileError(error, path, 'write');
      }
      data = existing + content;
    }
    try {
      await client.files.write(resolved, data);
    } catch (error) {
      throw this.#fileError(error, path, 'write');
    }
  }

  async updateFile(path: string, content: Uint8Array): Promise<void> {
    const resolved = this.resolvePath(path);
    const client = this.#usable();
    const copy = content.slice().buffer;
    try {
      await client.files.write(resolved, copy);
    } catch (error) {
      throw this.#fileError(error, path, 'write');
    }
  }

  async downloadFile(path: string): Promise<Uint8Array> {
    const normalized = typeof path === 'string' ? path.replace(/\\/g, '/') : '';
    const bare = normalized.replace(/^\/+/, '');
    if (!(bare === 'mnt/user-data' || bare.startsWith('mnt/user-data/'))) {
      this.#logger.error('Refused download outside allowed directory', { path });
      throw new SandboxPermissionError("Access denied: path must be under '/mnt/user-data'", {
        path,
        operation: 'download',
      });
    }
    const resolved = this.resolvePath(`/${bare}`);
    const client = this.#usable();
    let stream: ReadableStream<Uint8Array>;
    try {
      stream = await client.files.read(resolved, { format: 'stream' });
    } catch (error) {
      // Older SDKs reject the stream format; a buffered read still honours the cap afterwards.
      if (!isInvalidArgumentError(error)) throw this.#fileError(error, path, 'download');
      let bytes: Uint8Array;
      try {
        bytes = await client.files.read(resolved, { format: 'bytes' });
      } catch (inner) {
        throw this.#fileError(inner, path, 'download');
      }
      if (bytes.byteLength > MAX_DOWNLOAD_BYTES) throw tooLarge(path);
      return bytes;
    }
    return readCapped(stream, path);
  }

  /** Idempotent. Gives the VM handle up; never destroys the VM. */
  override async close(): Promise<void> {
    // Background processes end with the client that started them (see `SandboxProcesses`).
    if (this.#client !== undefined) await this.#processes.close();
    const client = this.#client;
    this.#client = undefined;
    if (client === undefined) return;
    try {
      await client.close();
    } catch (error) {
      this.#logger.warn('Failed to close e2b client', {
        sandboxId: this.id,
        error: errorMessage(error),
      });
    }
  }

  /** Paths are checked (and mapped) by `resolvePath`. */
  protected override checkPath(): void {}

  protected override remotePath(path: string): string {
    return this.resolvePath(path);
  }

  protected override callerPath(remote: string, asked: string): string {
    return this.#toCallerPath(remote, asked);
  }

  /** Stdout of a search command, whatever its exit status (the parsers read the header). */
  protected async runSearch(command: string): Promise<string> {
    const client = this.#usable();
    let result: E2BCommandResult;
    try {
      result = await client.commands.run(command, { timeoutMs: SDK_DEFAULT_COMMAND_TIMEOUT_MS });
    } catch (error) {
      const exited = commandExitResult(error);
      if (exited === undefined) throw this.#remoteError(error, 'search');
      result = exited;
    }
    return result.stdout;
  }

  #usable(): E2BRemoteSandbox {
    const client = this.#client;
    if (client === undefined) throw new SandboxRuntimeError('sandbox client has been closed');
    if (this.#dead) throw new SandboxNotFoundError(REAPED_MESSAGE.slice('Error: '.length), this.id);
    return client;
  }

  #remoteError(error: unknown, operation: string): Error {
    if (isSbxError(error)) return error;
    if (isSandboxGoneError(error)) {
      this.#dead = true;
      return new SandboxNotFoundError(`e2b sandbox is gone: ${errorMessage(error)}`, this.id, {
        cause: error,
      });
    }
    return new SandboxRuntimeError(`e2b ${operation} failed: ${errorMessage(error)}`, {
      cause: error,
    });
  }

  #fileError(error: unknown, path: string, operation: string): Error {
    if (isFileNotFoundError(error)) {
      return new SandboxFileNotFoundError(`No such file or directory: ${path}`, {
        path,
        operation,
      });
    }
    if (isSbxError(error) || isSandboxGoneError(error)) return this.#remoteError(error, operation);
    return new SandboxFileError(`Failed to ${operation} file ${path}: ${errorMessage(error)}`, {
      path,
      operation,
      kind: 'EIO',
    });
  }
}

function tooLarge(path: string): SandboxFileError {
  return new SandboxFileError(`File exceeds the ${MAX_DOWNLOAD_BYTES}-byte download limit`, {
    path,
    operation: 'download',
    kind: 'EFBIG',
  });
}

/** Reads a stream to the end, aborting (and cancelling the stream) past the download cap. */
async function readCapped(stream: ReadableStream<Uint8Array>, path: string): Promise<Uint8Array> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > MAX_DOWNLOAD_BYTES) throw tooLarge(path);
      chunks.push(value);
    }
  } catch (error) {
    await reader.cancel().catch(() => undefined);
    if (isSbxError(error)) throw error;
    throw new SandboxFileError(`Failed to download file ${path}: ${errorMessage(error)}`, {
      path,
      operation: 'download',
      kind: 'EIO',
    });
  } finally {
    reader.releaseLock();
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
