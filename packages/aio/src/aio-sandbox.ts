import { randomUUID } from 'node:crypto';
import { posix } from 'node:path';
import {
  AbortedError,
  DEFAULT_GLOB_MAX_RESULTS,
  DEFAULT_GREP_MAX_RESULTS,
  InvalidArgumentError,
  MAX_GREP_LINE_LENGTH,
  Sandbox,
  SandboxFileError,
  SandboxFileNotFoundError,
  SandboxRuntimeError,
  compareRelativePaths,
  compileGlob,
  compileGrepPattern,
  matchingLineIndices,
  globNameFilter,
  planRemoteListDir,
  redactSecrets,
  regexToPosixEre,
  remoteOutputLimit,
  shouldIgnorePath,
  silentLogger,
  truncateLine,
  validateExtraEnv,
} from '@sbx/core';
import type {
  ExecuteCommandOptions,
  GlobOptions,
  GlobResult,
  GrepMatch,
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
import type { ShellCommandResult } from './aio-api.js';
import { AioHttpClient, DEFAULT_REQUEST_TIMEOUT_MS } from './aio-http.js';
import type { AioRequestOptions } from './aio-http.js';
import { isHttpStatus } from './aio-http-error.js';
import { BASH_EXEC_UNSUPPORTED_MESSAGE } from './bash-exec-unsupported.js';
import {
  assembleOutput,
  bashOutcome,
  frameShellCommand,
  parseFramedOutput,
  shellOutcome,
} from './command-output.js';
import type { CommandOutcome } from './command-output.js';
import { CommandScopeRegistry } from './command-scopes.js';
import type { CommandScope } from './command-scopes.js';
import { MAX_DOWNLOAD_BYTES, checkDownloadPath } from './download-path.js';
import { hasErrorObservation } from './error-observation.js';

/** `no_change_timeout` of shell commands: seconds without new output before the API answers. */
export const DEFAULT_NO_CHANGE_TIMEOUT_SECONDS = 600;

/** `hard_timeout` of env-bearing commands when the call gives no `timeoutMs`. */
export const DEFAULT_ENV_COMMAND_TIMEOUT_SECONDS = 600;

/** Creating a shell session should be quick; a hung create must not hold a command for 10 min. */
const SESSION_CREATE_TIMEOUT_MS = 30_000;
/** Deleting a session is best-effort cleanup. */
const SESSION_DELETE_TIMEOUT_MS = 5_000;
/** Extra wall clock over a command's own limit for the HTTP answer to arrive. */
const ANSWER_MARGIN_MS = 30_000;
/** The grep API refuses larger `max_results`. */
const GREP_API_MAX_RESULTS = 10_000;

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

function normalizeRoot(root: string): string {
  if (typeof root !== 'string' || !root.startsWith('/')) {
    throw new InvalidArgumentError(`search root must be an absolute path, got '${root}'`);
  }
  const trimmed = root.replace(/\/+$/, '');
  return trimmed === '' ? '/' : trimmed;
}

function relativeTo(root: string, entry: string): string | undefined {
  const prefix = root === '/' ? '/' : `${root}/`;
  if (!entry.startsWith(prefix) || entry.length === prefix.length) return undefined;
  const rel = entry.slice(prefix.length).replace(/\/+$/, '');
  if (rel === '' || rel.split('/').some((s) => s === '' || s === '.' || s === '..')) {
    return undefined;
  }
  return rel;
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
 * Commands without env run in the container's persistent shell session (a `cd` or `export`
 * persists into later commands, as in a terminal); commands with env go through
 * `POST /v1/bash/exec` on a fresh session per call, with the values in the structured `env` field,
 * so secrets never persist and never appear in a command string. Command scopes (subagents) get
 * one ordered persistent session each. See README for output framing and exit codes.
 *
 * One lock per sandbox serializes every use of the default session (commands, `listDir`), every
 * `bash/exec` attempt, writes and downloads: the image's single default session corrupts under
 * concurrent commands. Reads, `glob` and `grep` do not take it.
 */
export class AioSandbox extends Sandbox {
  readonly baseUrl: string;
  private readonly http: AioHttpClient;
  private readonly api: AioApi;
  private readonly logger: Logger;
  private readonly lock = new Mutex();
  private readonly scopes = new CommandScopeRegistry();
  private readonly requestTimeoutMs: number;
  private readonly noChangeTimeoutSeconds: number;
  private readonly envCommandTimeoutSeconds: number;
  private bashExecUnsupported = false;
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
      ...(options.trustEnvProxy === undefined ? {} : { trustEnvProxy: options.trustEnvProxy }),
    });
    this.baseUrl = options.baseUrl;
    this.api = new AioApi(this.http);
  }

  /** True once `close()` was called. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** True after the image answered 404 to `POST /v1/bash/exec` (an image older than 1.9.x). */
  get bashExecUnsupportedDetected(): boolean {
    return this.bashExecUnsupported;
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

  private commandRequest(timeoutMs: number | undefined, signal?: AbortSignal): AioRequestOptions {
    return {
      signal,
      timeoutMs: Math.max(this.requestTimeoutMs, (timeoutMs ?? 0) + ANSWER_MARGIN_MS),
    };
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
    if (hasEnv(options.env)) return this.runWithEnv(command, options.env, options);
    const outcome = await withLock(this.lock, options.signal, () =>
      this.runOnDefaultSession(command, options.timeoutMs, options.signal),
    );
    return assembleOutput(outcome);
  }

  private isCorrupted(result: ShellCommandResult, token: string): boolean {
    // A healthy session that merely printed the signature still completes the frame.
    return (
      hasErrorObservation(result.output) &&
      parseFramedOutput(result.output ?? '', token) === undefined
    );
  }

  private limits(timeoutMs: number | undefined) {
    return {
      hardTimeoutSeconds: timeoutMs === undefined ? undefined : timeoutMs / 1000,
      noChangeTimeoutSeconds: this.noChangeTimeoutSeconds,
    };
  }

  private async execFramed(
    command: string,
    sessionId: string | undefined,
    timeoutMs: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<{ result: ShellCommandResult; token: string }> {
    const framed = frameShellCommand(command);
    const result = await this.api.shellExec(
      {
        command: framed.script,
        noChangeTimeout: this.noChangeTimeoutSeconds,
        ...(sessionId === undefined ? {} : { id: sessionId }),
        ...(timeoutMs === undefined ? {} : { hardTimeout: timeoutMs / 1000 }),
      },
      this.commandRequest(timeoutMs, signal),
    );
    return { result, token: framed.token };
  }

  /** Caller holds `this.lock`. */
  private async runOnDefaultSession(
    command: string,
    timeoutMs: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<CommandOutcome> {
    const first = await this.execFramed(command, undefined, timeoutMs, signal);
    if (!this.isCorrupted(first.result, first.token)) {
      return shellOutcome(first.result, first.token, this.limits(timeoutMs));
    }
    this.logger.warn(
      'AIO default shell session answered ErrorObservation; retrying once on a fresh session',
      {
        sandbox_id: this.id,
      },
    );
    const fresh = randomUUID();
    await this.createSession(fresh, signal);
    try {
      const retry = await this.execFramed(command, fresh, timeoutMs, signal);
      return shellOutcome(retry.result, retry.token, this.limits(timeoutMs));
    } finally {
      await this.deleteSessionQuietly(fresh);
    }
  }

  private async createSession(id: string, signal?: AbortSignal): Promise<void> {
    await this.api.createShellSession(id, { signal, timeoutMs: SESSION_CREATE_TIMEOUT_MS });
  }

  private async deleteSessionQuietly(id: string): Promise<void> {
    try {
      await this.api.deleteShellSession(id, { timeoutMs: SESSION_DELETE_TIMEOUT_MS });
    } catch (err) {
      // Cleanup never changes a command's result; an orphaned session ends with the container.
      this.logger.warn('Could not delete AIO shell session', {
        sandbox_id: this.id,
        session_id: id,
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }

  private async runWithEnv(
    command: string,
    env: Record<string, string>,
    options: ExecuteCommandOptions,
  ): Promise<string> {
    if (this.bashExecUnsupported) return BASH_EXEC_UNSUPPORTED_MESSAGE;
    const hardTimeout =
      options.timeoutMs === undefined ? this.envCommandTimeoutSeconds : options.timeoutMs / 1000;
    const http = this.commandRequest(hardTimeout * 1000, options.signal);
    const attempt = () =>
      withLock(this.lock, options.signal, () =>
        this.api.bashExec({ command, env, hardTimeout }, http),
      );
    let first;
    try {
      first = await attempt();
    } catch (err) {
      if (isHttpStatus(err, 404)) {
        this.bashExecUnsupported = true;
        this.logger.error(
          'AIO sandbox image has no POST /v1/bash/exec: commands with per-call environment cannot run; upgrade the image',
          { sandbox_id: this.id },
        );
        return BASH_EXEC_UNSUPPORTED_MESSAGE;
      }
      throw err;
    }
    let text = assembleOutput(bashOutcome(first, hardTimeout));
    if (hasErrorObservation(first.stdout) || hasErrorObservation(first.stderr)) {
      this.logger.warn('AIO bash/exec answered ErrorObservation; retrying once', {
        sandbox_id: this.id,
      });
      try {
        const retry = await attempt();
        const clean =
          (retry.stdout || retry.stderr) &&
          !hasErrorObservation(retry.stdout) &&
          !hasErrorObservation(retry.stderr);
        if (clean) text = assembleOutput(bashOutcome(retry, hardTimeout));
      } catch (err) {
        if (err instanceof AbortedError) throw err;
        this.logger.warn('AIO bash/exec retry failed; returning the first answer', {
          sandbox_id: this.id,
          error: err instanceof Error ? err.message : String(err),
        });
      }
    }
    return redactSecrets(text, env);
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
      this.runInScope(scope, command, rest.timeoutMs, rest.signal),
    );
    return assembleOutput(outcome);
  }

  /** Caller holds the scope's lock. */
  private async runInScope(
    scope: CommandScope,
    command: string,
    timeoutMs: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<CommandOutcome> {
    const ensureSession = async (): Promise<string> => {
      if (scope.sessionId === undefined) {
        const id = randomUUID();
        await this.createSession(id, signal);
        // Recorded at once, so a release that is waiting for this command deletes it.
        scope.sessionId = id;
      }
      return scope.sessionId;
    };

    let sessionId = await ensureSession();
    let run;
    try {
      run = await this.execFramed(command, sessionId, timeoutMs, signal);
    } catch (err) {
      // The session is gone server-side (the shell exited, or the image dropped it): one new one.
      if (!isHttpStatus(err, 404)) throw err;
      this.logger.warn('AIO scope session not found; recreating it once', {
        sandbox_id: this.id,
        scope_id: scope.scopeId,
      });
      scope.sessionId = undefined;
      sessionId = await ensureSession();
      run = await this.execFramed(command, sessionId, timeoutMs, signal);
    }

    if (this.isCorrupted(run.result, run.token)) {
      this.logger.warn('AIO scope session answered ErrorObservation; replacing it', {
        sandbox_id: this.id,
        scope_id: scope.scopeId,
      });
      const corrupted = sessionId;
      scope.sessionId = undefined;
      await this.deleteSessionQuietly(corrupted);
      const replacement = await ensureSession();
      const retry = await this.execFramed(command, replacement, timeoutMs, signal);
      if (this.isCorrupted(retry.result, retry.token)) {
        scope.sessionId = undefined;
        await this.deleteSessionQuietly(replacement);
      }
      return shellOutcome(retry.result, retry.token, this.limits(timeoutMs));
    }

    if (run.result.status !== undefined && run.result.status !== 'completed') {
      // After a timeout the session may still be busy with the old command: start afresh.
      scope.sessionId = undefined;
      await this.deleteSessionQuietly(sessionId);
    }
    return shellOutcome(run.result, run.token, this.limits(timeoutMs));
  }

  override async releaseCommandScope(scopeId: string): Promise<void> {
    await this.scopes.release(scopeId, (scope) => this.dropScopeSession(scope));
  }

  private async dropScopeSession(scope: CommandScope): Promise<void> {
    const id = scope.sessionId;
    scope.sessionId = undefined;
    if (id !== undefined && !this.http.closed) await this.deleteSessionQuietly(id);
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
        const reason = err instanceof Error ? err.message : String(err);
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
      this.runOnDefaultSession(plan.command, undefined, undefined),
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
    const matches = compileGlob(pattern);
    const maxResults = options.maxResults ?? DEFAULT_GLOB_MAX_RESULTS;
    if (!Number.isInteger(maxResults) || maxResults < 1) {
      throw new InvalidArgumentError(`maxResults must be a positive integer, got ${maxResults}`);
    }
    const root = normalizeRoot(path);
    this.assertOpen();
    const entries = options.includeDirs
      ? (await this.api.listFiles(root)).map((f) => f.path)
      : await this.api.findFiles(root, globNameFilter(pattern) ?? '*');
    const rels = new Set<string>();
    for (const entry of entries) {
      const rel = relativeTo(root, entry);
      if (rel === undefined || shouldIgnorePath(rel) || !matches(rel)) continue;
      rels.add(rel);
    }
    const sorted = [...rels].sort(compareRelativePaths);
    return {
      paths: sorted
        .slice(0, maxResults)
        .map((rel) => (root === '/' ? `/${rel}` : `${root}/${rel}`)),
      truncated: sorted.length > maxResults,
    };
  }

  override async grep(
    path: string,
    pattern: string,
    options: GrepOptions = {},
  ): Promise<GrepResult> {
    const regex = compileGrepPattern(pattern, options);
    const glob = options.glob == null ? undefined : compileGlob(options.glob);
    const maxResults = options.maxResults ?? DEFAULT_GREP_MAX_RESULTS;
    if (!Number.isInteger(maxResults) || maxResults < 1) {
      throw new InvalidArgumentError(`maxResults must be a positive integer, got ${maxResults}`);
    }
    const root = normalizeRoot(path);
    this.assertOpen();
    const nameFilter = options.glob == null ? undefined : globNameFilter(options.glob);
    // The image greps with its own regex engine: send a POSIX ERE that matches at least what the
    // pattern matches, then re-check every line here with the pattern itself.
    const { matches: raw, truncated: apiTruncated } = await this.api.grep({
      path: root,
      pattern: options.literal ? pattern : regexToPosixEre(regex.source),
      caseInsensitive: regex.flags.includes('i'),
      fixedStrings: options.literal === true,
      maxResults: Math.min(remoteOutputLimit(maxResults), GREP_API_MAX_RESULTS),
      ...(nameFilter === undefined ? {} : { include: [nameFilter] }),
    });
    const candidates: { rel: string; file: string; lineNumber: number; text: string }[] = [];
    for (const m of raw) {
      let rel: string | undefined;
      if (m.file === root) rel = posix.basename(root);
      else {
        rel = relativeTo(root, m.file);
        if (rel !== undefined && shouldIgnorePath(rel)) continue;
      }
      if (rel === undefined || (glob && !glob(rel))) continue;
      const text = m.lineContent.replace(/\r?\n$/, '').replace(/\r$/, '');
      candidates.push({ rel, file: m.file, lineNumber: m.lineNumber, text });
    }
    // The pattern runs on a search worker under a deadline, never on this event loop.
    const hits = await matchingLineIndices(
      candidates.map((c) => c.text),
      regex,
      MAX_GREP_LINE_LENGTH,
    );
    const found: { rel: string; match: GrepMatch }[] = hits.map((i) => {
      const c = candidates[i]!;
      return {
        rel: c.rel,
        match: { path: c.file, lineNumber: c.lineNumber, line: truncateLine(c.text) },
      };
    });
    found.sort(
      (a, b) => compareRelativePaths(a.rel, b.rel) || a.match.lineNumber - b.match.lineNumber,
    );
    return {
      matches: found.slice(0, maxResults).map((f) => f.match),
      truncated: found.length > maxResults || apiTruncated,
    };
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
          await this.scopes.closeAll((scope) => this.dropScopeSession(scope));
          await this.lock.runExclusive(() => this.http.close());
        } catch (err) {
          this.logger.warn('Error closing AioSandbox client', {
            sandbox_id: this.id,
            error: err instanceof Error ? err.message : String(err),
          });
        }
      })();
    }
    return this.closing;
  }
}
