import {
  errorMessage,
  AbortedError,
  InvalidArgumentError,
  Sandbox,
  SandboxFileError,
  SandboxFileNotFoundError,
  SandboxRuntimeError,
  redactSecrets,
  silentLogger,
  sleep,
  validateExtraEnv,
} from '@sbx/core';
import {
  ProcessTable,
  assertCommandText,
  assertExecSupported,
  assertSandboxFilePath,
  planRemoteListDir,
} from '@sbx/core/provider-kit';
import type {
  ExecOptions,
  ExecResult,
  ExecuteCommandOptions,
  SandboxCapabilities,
  GlobOptions,
  GlobResult,
  GrepOptions,
  GrepResult,
  ListDirOptions,
  Logger,
  ReadFileOptions,
  ScopedExecuteCommandOptions,
  WriteFileOptions,
} from '@sbx/core';
import { Mutex } from 'async-mutex';
import { withLock } from './abortable-lock.js';
import { AioApi } from './aio-api.js';
import { AioHttpClient, DEFAULT_REQUEST_TIMEOUT_MS, aioRequestHeaders } from './aio-http.js';
import { assembleOutput, outcomeResult } from './command-output.js';
import { AioBashLauncher, execInBashProcess } from './aio-bash-processes.js';
import { BASH_EXEC_UNSUPPORTED_MESSAGE } from './bash-exec-unsupported.js';
import { CommandScopeRegistry } from './command-scopes.js';
import { MAX_DOWNLOAD_BYTES, checkDownloadPath } from './download-path.js';
import { ShellSessionManager } from './shell-sessions.js';
import { AioSearch } from './aio-search.js';
import { AioCommandRunner } from './aio-commands.js';

/**
 * Output streams (async bash commands, long-polled) and background processes run on the bash
 * API. The image has no way to close a command's input: `exec({ stdin })` feeds the command from
 * a file, and a background process takes `write` but not `closeStdin`.
 */
const AIO_CAPABILITIES: SandboxCapabilities = Object.freeze({
  streaming: true,
  stdin: true,
  backgroundProcesses: true,
});

/** `no_change_timeout` of shell commands: seconds without new output before the API answers. */
export const DEFAULT_NO_CHANGE_TIMEOUT_SECONDS = 600;

/** `hard_timeout` of env-bearing commands when the call gives no `timeoutMs`. */
export const DEFAULT_ENV_COMMAND_TIMEOUT_SECONDS = 600;

export interface AioSandboxOptions {
  /** Base URL of the sandbox container's API, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** Known home directory; otherwise read once from `GET /v1/sandbox`. */
  homeDir?: string;
  logger?: Logger;
  /** Per-request HTTP limit. Default 600 s. */
  requestTimeoutMs?: number;
  /** `no_change_timeout` sent with shell commands. Default 600 s. */
  noChangeTimeoutSeconds?: number;
  /** `hard_timeout` of env-bearing commands without `timeoutMs`. Default 600 s. */
  envCommandTimeoutSeconds?: number;
  /** Overrides the proxy classification of `baseUrl` (see `shouldTrustEnvProxy`). */
  trustEnvProxy?: boolean;
  /**
   * The image's API key (`SANDBOX_API_KEY` in the container), sent as `X-AIO-API-Key` on every
   * call. Never logged.
   */
  apiKey?: string;
  /** Extra headers for every call (a gateway's own auth); `apiKey` wins for its header. */
  headers?: Readonly<Record<string, string>>;
}

function hasEnv(env: Readonly<Record<string, string>> | undefined): env is Record<string, string> {
  return env !== undefined && env !== null && Object.keys(env).length > 0;
}

function positiveLine(name: string, value: number | undefined): void {
  if (value === undefined) return;
  if (!Number.isInteger(value) || value < 1) {
    throw new InvalidArgumentError(`${name} must be a positive integer (1-based), got ${value}`);
  }
}

function checkTimeout(timeoutMs: number | undefined): void {
  if (timeoutMs === undefined) return;
  if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new InvalidArgumentError(`timeoutMs must be a positive number, got ${timeoutMs}`);
  }
}

/** Lines of a ranged read, each without its line ending, joined by `\n` (no trailing newline). */
function joinRangeLines(content: string): string {
  const lines = content.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines.map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l)).join('\n');
}

/**
 * A sandbox in an all-in-one sandbox container, driven over its HTTP API.
 *
 * Commands without env run in this client's shell session, created with an id and reused (the
 * image has no default session: an id-less call would get a one-off session), so a `cd` or
 * `export` persists into later commands, as in a terminal. Commands with env go through
 * `POST /v1/bash/exec` on a fresh session per call (closed afterwards), with the values in the
 * structured `env` field, so secrets never persist and never appear in a command string. Command
 * scopes (subagents) get one ordered session each, bounded below the image's session cap (see
 * `ShellSessionManager`). See README for output framing, exit codes and session limits.
 *
 * One lock per sandbox serializes every use of the default session (commands, `listDir`), every
 * `bash/exec` attempt, writes and downloads: a session runs one command at a time. Reads, `glob`
 * and `grep` do not take it.
 *
 * One concept, kept whole: the `Sandbox` contract over one container's HTTP API; its sessions,
 * scopes and HTTP calls already live in their own files, and every method here shares the lock and
 * the default session.
 */
export class AioSandbox extends Sandbox {
  readonly baseUrl: string;
  private readonly http: AioHttpClient;
  private readonly api: AioApi;
  private readonly logger: Logger;
  private readonly lock = new Mutex();
  private readonly scopes = new CommandScopeRegistry();
  private readonly sessions: ShellSessionManager;
  private readonly search: AioSearch;
  private readonly requestTimeoutMs: number;
  private readonly noChangeTimeoutSeconds: number;
  private readonly envCommandTimeoutSeconds: number;
  private readonly commands: AioCommandRunner;
  private readonly launcher: AioBashLauncher;
  private readonly processTable: ProcessTable;
  private homeDirValue: string | undefined;
  private homeDirPending: Promise<string> | undefined;
  private closing: Promise<void> | undefined;
  private closed = false;

  constructor(id: string, options: AioSandboxOptions) {
    super(id);
    if (!options || typeof options.baseUrl !== 'string' || options.baseUrl === '') {
      throw new InvalidArgumentError('AioSandbox needs a baseUrl');
    }
    try {
      new URL(options.baseUrl);
    } catch (err) {
      throw new InvalidArgumentError(`AioSandbox baseUrl is not a URL: ${options.baseUrl}`, {
        cause: err,
      });
    }
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.noChangeTimeoutSeconds =
      options.noChangeTimeoutSeconds ?? DEFAULT_NO_CHANGE_TIMEOUT_SECONDS;
    this.envCommandTimeoutSeconds =
      options.envCommandTimeoutSeconds ?? DEFAULT_ENV_COMMAND_TIMEOUT_SECONDS;
    this.logger = options.logger ?? silentLogger;
    this.homeDirValue = options.homeDir;
    this.http = new AioHttpClient({
      baseUrl: options.baseUrl,
      timeoutMs: this.requestTimeoutMs,
      headers: aioRequestHeaders(options),
      ...(options.trustEnvProxy === undefined ? {} : { trustEnvProxy: options.trustEnvProxy }),
    });
    this.baseUrl = options.baseUrl;
    this.api = new AioApi(this.http);
    this.sessions = new ShellSessionManager({ api: this.api, logger: this.logger, sandboxId: id });
    this.search = new AioSearch({ api: this.api, logger: this.logger, sandboxId: id });
    this.commands = new AioCommandRunner({
      sandboxId: id,
      api: this.api,
      logger: this.logger,
      lock: this.lock,
      scopes: this.scopes,
      sessions: this.sessions,
      requestTimeoutMs: this.requestTimeoutMs,
      noChangeTimeoutSeconds: this.noChangeTimeoutSeconds,
      envCommandTimeoutSeconds: this.envCommandTimeoutSeconds,
      httpClosed: () => this.http.closed,
    });
    const launchHooks = {
      api: this.api,
      logger: this.logger,
      sandboxId: id,
      execDir: async (cwd: string) => cwd,
      closed: () => this.http.closed,
      pause: (ms: number) => sleep(ms),
    };
    this.launcher = new AioBashLauncher(launchHooks);
    this.processTable = new ProcessTable({
      // Background processes in named sessions, so another client of the container reaches them.
      launcher: new AioBashLauncher({ ...launchHooks, attachable: true }),
      stdin: true,
      logger: this.logger,
      sandboxId: id,
    });
  }

  /** True once `close()` was called. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** True after the image answered 404 to `POST /v1/bash/exec` (an image older than 1.9.x). */
  get bashExecUnsupportedDetected(): boolean {
    return this.commands.bashExecUnsupported;
  }

  /** Whether requests go through the environment's proxies (see `shouldTrustEnvProxy`). */
  get usesEnvProxy(): boolean {
    return this.http.trustEnvProxy;
  }

  /** Number of live command scopes (observability and tests). */
  get activeScopeCount(): number {
    return this.scopes.size;
  }

  private assertOpen(): void {
    if (this.closed) {
      throw new SandboxRuntimeError(`AioSandbox ${this.id} is closed`, {
        details: { sandbox_id: this.id },
      });
    }
  }

  /** The container user's home directory (`home_dir` of `GET /v1/sandbox`), read once. */
  async getHomeDir(signal?: AbortSignal): Promise<string> {
    if (this.homeDirValue !== undefined) return this.homeDirValue;
    this.assertOpen();
    if (!this.homeDirPending) {
      const pending = this.api.sandboxContext({ signal }).then((ctx) => {
        if (ctx.homeDir === undefined) {
          throw new SandboxRuntimeError('GET /v1/sandbox did not report home_dir', {
            details: { sandbox_id: this.id },
          });
        }
        this.homeDirValue = ctx.homeDir;
        return ctx.homeDir;
      });
      pending.catch(() => {
        if (this.homeDirPending === pending) this.homeDirPending = undefined;
      });
      this.homeDirPending = pending;
    }
    return this.homeDirPending;
  }

  // -------------------------------------------------------------------------------------------
  // commands

  override async executeCommand(
    command: string,
    options: ExecuteCommandOptions = {},
  ): Promise<string> {
    validateExtraEnv(options.env);
    checkTimeout(options.timeoutMs);
    this.assertOpen();
    if (hasEnv(options.env)) return this.commands.runWithEnv(command, options.env, options);
    const outcome = await withLock(this.lock, options.signal, () =>
      this.commands.runOnDefaultSession(command, options.timeoutMs, options.signal),
    );
    return assembleOutput(outcome);
  }

  override get capabilities(): SandboxCapabilities {
    return AIO_CAPABILITIES;
  }

  override get processes(): ProcessTable {
    return this.processTable;
  }

  /**
   * A plain command (no env, cwd or listeners) runs where `executeCommand` runs it: the scope's
   * session, else the default session, so `cd` and `export` persist as they do there. A command
   * with env runs through `bash/exec` (secrets never ride a persistent session); one with a cwd
   * or listeners runs as an async bash command whose output is long-polled, so it streams.
   */
  override async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    validateExtraEnv(options.env);
    checkTimeout(options.timeoutMs);
    assertCommandText(command);
    assertExecSupported(this.capabilities, options);
    if (options.cwd !== undefined) assertSandboxFilePath(options.cwd);
    this.assertOpen();
    const started = performance.now();
    const streamed = options.onStdout !== undefined || options.onStderr !== undefined;
    if (streamed || options.cwd !== undefined || options.stdin !== undefined) {
      return execInBashProcess(this.launcher, this.api, command, options, {
        timeoutMs: options.timeoutMs ?? this.envCommandTimeoutSeconds * 1000,
        logger: this.logger,
        sandboxId: this.id,
      });
    }
    if (hasEnv(options.env)) {
      const env = options.env;
      const outcome = await this.commands.runWithEnvOutcome(command, env, options);
      if (outcome === undefined) {
        throw new SandboxRuntimeError(BASH_EXEC_UNSUPPORTED_MESSAGE.replace(/^Error: /, ''));
      }
      const result = outcomeResult(outcome, started);
      return {
        ...result,
        stdout: redactSecrets(result.stdout, env),
        stderr: redactSecrets(result.stderr, env),
      };
    }
    const scopeId = options.scopeId;
    const outcome = scopeId
      ? await this.scopes.run(scopeId, options.signal, (scope) =>
          this.commands.runInScope(scope, command, options.timeoutMs, options.signal),
        )
      : await withLock(this.lock, options.signal, () =>
          this.commands.runOnDefaultSession(command, options.timeoutMs, options.signal),
        );
    return outcomeResult(outcome, started);
  }

  /** The id of this client's default shell session, once created (tests, observability). */
  get defaultSessionId(): string | undefined {
    return this.sessions.defaultSessionId;
  }

  override async executeCommandInScope(
    command: string,
    options: ScopedExecuteCommandOptions,
  ): Promise<string> {
    const { scopeId, ...rest } = options;
    validateExtraEnv(rest.env);
    checkTimeout(rest.timeoutMs);
    // Secrets never ride a persistent session; no scope means the default session.
    if (hasEnv(rest.env) || !scopeId) return this.executeCommand(command, rest);
    this.assertOpen();
    const outcome = await this.scopes.run(scopeId, rest.signal, (scope) =>
      this.commands.runInScope(scope, command, rest.timeoutMs, rest.signal),
    );
    return assembleOutput(outcome);
  }

  override async releaseCommandScope(scopeId: string): Promise<void> {
    await this.scopes.release(scopeId, (scope) => this.commands.dropScopeSession(scope));
  }

  // -------------------------------------------------------------------------------------------
  // files

  override async readFile(path: string, options: ReadFileOptions = {}): Promise<string> {
    positiveLine('startLine', options.startLine);
    positiveLine('endLine', options.endLine);
    this.assertOpen();
    const ranged = options.startLine !== undefined || options.endLine !== undefined;
    const range: { start?: number; end?: number } = {};
    if (options.startLine !== undefined) range.start = Math.max(options.startLine - 1, 0);
    if (options.endLine !== undefined) range.end = Math.max(options.endLine, 0);
    const content = await this.api.readFile(path, range);
    // Images differ in whether a ranged read keeps line endings; the contract has none.
    return ranged ? joinRangeLines(content) : content;
  }

  override async writeFile(
    path: string,
    content: string,
    options: WriteFileOptions = {},
  ): Promise<void> {
    if (typeof content !== 'string') {
      throw new InvalidArgumentError('writeFile content must be a string');
    }
    this.assertOpen();
    await withLock(this.lock, undefined, async () => {
      let text = content;
      if (options.append) {
        // Read-then-write under the sandbox lock: concurrent appends through this client never
        // lose an update. A file that cannot be read (other than missing) is not overwritten.
        let existing = '';
        try {
          existing = await this.api.readFile(path, {});
        } catch (err) {
          if (!(err instanceof SandboxFileNotFoundError && err.kind === 'ENOENT')) throw err;
        }
        text = existing + content;
      }
      await this.api.writeFile(path, text, 'utf-8');
    });
  }

  override async updateFile(path: string, content: Uint8Array): Promise<void> {
    if (!(content instanceof Uint8Array)) {
      throw new InvalidArgumentError('updateFile content must be a Uint8Array');
    }
    this.assertOpen();
    const encoded = Buffer.from(content.buffer, content.byteOffset, content.byteLength).toString(
      'base64',
    );
    await withLock(this.lock, undefined, () => this.api.writeFile(path, encoded, 'base64'));
  }

  override async downloadFile(path: string): Promise<Uint8Array> {
    checkDownloadPath(path, this.logger);
    this.assertOpen();
    return withLock(this.lock, undefined, async () => {
      try {
        return await this.api.download(path, {
          maxBytes: MAX_DOWNLOAD_BYTES,
          tooLarge: () =>
            new SandboxFileError(
              `File exceeds maximum download size of ${MAX_DOWNLOAD_BYTES} bytes`,
              { path, operation: 'download', kind: 'EFBIG' },
            ),
        });
      } catch (err) {
        if (err instanceof SandboxFileError || err instanceof AbortedError) throw err;
        const reason = errorMessage(err);
        throw new SandboxFileError(
          `Failed to download file '${path}' from sandbox: ${reason}`,
          { path, operation: 'download', kind: 'EIO' },
          { cause: err },
        );
      }
    });
  }

  override async listDir(path: string, options: ListDirOptions = {}): Promise<string[]> {
    const plan = planRemoteListDir(path, options);
    this.assertOpen();
    const outcome = await withLock(this.lock, undefined, () =>
      this.commands.runOnDefaultSession(plan.command, undefined, undefined),
    );
    if (outcome.timeout) {
      throw new SandboxRuntimeError(`Listing ${path} did not finish`, {
        details: { sandbox_id: this.id },
      });
    }
    return plan.parse(outcome.stdout);
  }

  override async glob(
    path: string,
    pattern: string,
    options: GlobOptions = {},
  ): Promise<GlobResult> {
    this.assertOpen();
    return this.search.glob(path, pattern, options);
  }

  override async grep(
    path: string,
    pattern: string,
    options: GrepOptions = {},
  ): Promise<GrepResult> {
    this.assertOpen();
    return this.search.grep(path, pattern, options);
  }

  // -------------------------------------------------------------------------------------------
  // lifecycle

  /**
   * Ends every command scope (deleting its session after any command still running in it), then
   * releases the pooled sockets. Idempotent; never throws (a failure is logged).
   */
  override close(): Promise<void> {
    if (!this.closing) {
      this.closed = true;
      this.closing = (async () => {
        try {
          // Background processes end with the client that started them (see SandboxProcesses).
          await this.processTable.close();
          await this.scopes.closeAll((scope) => this.commands.dropScopeSession(scope));
          await this.lock.runExclusive(() => this.http.close());
        } catch (err) {
          this.logger.warn('Error closing AioSandbox client', {
            sandbox_id: this.id,
            error: errorMessage(err),
          });
        }
      })();
    }
    return this.closing;
  }
}
