import { SandboxFileError, SandboxFileNotFoundError } from '@sbx/core';
import { AioHttpError } from './aio-http-error.js';
import type { AioHttpClient, AioRequestOptions } from './aio-http.js';
import { fileErrorFor } from './file-errors.js';

/*
 * Typed calls onto the all-in-one sandbox image's HTTP API (the subset sbx uses; paths and fields
 * as in the image's OpenAPI document). JSON answers are wrapped as
 * `{ success, message, data, hint }`; a file operation the image refuses comes back as HTTP 200
 * with `success: false` and a FileOperationError in `data`, which becomes a typed
 * `SandboxFileError` here.
 */

/** `status` of a shell command (`BashCommandStatus`). */
export type ShellCommandStatus =
  'running' | 'completed' | 'no_change_timeout' | 'hard_timeout' | 'terminated';

export interface ShellCommandResult {
  sessionId: string | undefined;
  status: ShellCommandStatus | string | undefined;
  /** Terminal output (stdout and stderr merged); may be null. */
  output: string | null;
  exitCode: number | null;
}

export interface BashExecResult {
  /** The bash session the image opened for the call; closed afterwards (it would stay an hour). */
  sessionId: string | undefined;
  status: string | undefined;
  stdout: string | null;
  stderr: string | null;
  exitCode: number | null;
}

/** One `bash/output` answer: the new output and the command's state. */
export interface BashOutput {
  stdout: string;
  stderr: string;
  offset: number;
  stderrOffset: number;
  /** `running`, `completed`, `timed_out`, `killed` (`pending` before it starts). */
  status: string | undefined;
  exitCode: number | null;
}

export interface ListedFile {
  path: string;
  isDirectory: boolean;
}

export interface GrepApiMatch {
  file: string;
  lineNumber: number;
  lineContent: string;
}

export interface SandboxContext {
  homeDir: string | undefined;
  version: string | undefined;
}

type Json = Record<string, unknown>;

function asObject(value: unknown): Json | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Json)
    : undefined;
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function nullableStr(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function int(value: unknown): number | null {
  return typeof value === 'number' && Number.isInteger(value) ? value : null;
}

interface Envelope {
  success: boolean;
  message: string | undefined;
  data: unknown;
}

export class AioApi {
  constructor(readonly http: AioHttpClient) {}

  private envelope(method: string, path: string, body: unknown): Envelope {
    const obj = asObject(body);
    if (!obj) {
      throw new AioHttpError(`${method} ${path} answered a body that is not an object`, {
        method,
        url: this.http.baseUrl + path,
      });
    }
    return {
      success: obj.success !== false,
      message: str(obj.message),
      data: obj.data,
    };
  }

  /** A call whose failure is a plain error (not a file failure). */
  private async call(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    body: unknown,
    options: AioRequestOptions,
  ): Promise<Envelope> {
    const res = await this.http.json(method, path, body, options);
    const env = this.envelope(method, path, res.body);
    if (!env.success) {
      throw new AioHttpError(`${method} ${path} reported failure: ${env.message ?? 'no message'}`, {
        method,
        url: this.http.baseUrl + path,
        status: res.status,
      });
    }
    return env;
  }

  /** A file call: a refused operation becomes a typed file error naming `shown`. */
  private async fileCall(
    path: string,
    body: unknown,
    operation: string,
    shown: string,
    options: AioRequestOptions,
  ): Promise<unknown> {
    let res;
    try {
      res = await this.http.json('POST', path, body, options);
    } catch (err) {
      if (!(err instanceof AioHttpError)) throw err;
      throw new SandboxFileError(
        `Cannot ${operation} ${shown}: ${err.baseMessage}`,
        { path: shown, operation, kind: 'EIO' },
        { cause: err },
      );
    }
    const env = this.envelope('POST', path, res.body);
    if (!env.success) {
      const data = asObject(env.data);
      throw fileErrorFor(
        {
          errnoName: str(data?.errno_name),
          errorType: str(data?.error_type),
          message: str(data?.message) ?? env.message,
        },
        shown,
        operation,
      );
    }
    return env.data;
  }

  /** `GET /v1/sandbox`: readiness and environment (`home_dir` is a top-level field). */
  async sandboxContext(options: AioRequestOptions = {}): Promise<SandboxContext> {
    const res = await this.http.json('GET', '/v1/sandbox', undefined, options);
    const obj = asObject(res.body) ?? {};
    const data = asObject(obj.data);
    return {
      homeDir: str(obj.home_dir) ?? str(data?.home_dir),
      version: str(obj.version),
    };
  }

  async shellExec(
    request: { command: string; id?: string; noChangeTimeout: number; hardTimeout?: number },
    options: AioRequestOptions = {},
  ): Promise<ShellCommandResult> {
    // truncate: false, or the image cuts the output at 30,000 characters, end-of-output frame
    // included.
    const body: Json = {
      command: request.command,
      no_change_timeout: request.noChangeTimeout,
      truncate: false,
    };
    if (request.id !== undefined) body.id = request.id;
    if (request.hardTimeout !== undefined) body.hard_timeout = request.hardTimeout;
    const env = await this.call('POST', '/v1/shell/exec', body, options);
    const data = asObject(env.data) ?? {};
    return {
      sessionId: str(data.session_id),
      status: str(data.status),
      output: nullableStr(data.output),
      exitCode: int(data.exit_code),
    };
  }

  async createShellSession(id: string, options: AioRequestOptions = {}): Promise<void> {
    await this.call('POST', '/v1/shell/sessions/create', { id }, options);
  }

  async deleteShellSession(id: string, options: AioRequestOptions = {}): Promise<void> {
    await this.call('DELETE', `/v1/shell/sessions/${encodeURIComponent(id)}`, undefined, options);
  }

  /** `POST /v1/shell/kill`: ends the session's running command; the session stays. */
  async killShell(id: string, options: AioRequestOptions = {}): Promise<void> {
    await this.call('POST', '/v1/shell/kill', { id }, options);
  }

  /** `GET /v1/shell/sessions/stats`: the live session cap (`max_sessions`), if reported. */
  async shellSessionStats(options: AioRequestOptions = {}): Promise<{ maxSessions?: number }> {
    const env = await this.call('GET', '/v1/shell/sessions/stats', undefined, options);
    const max = int(asObject(env.data)?.max_sessions);
    return max !== null && max > 0 ? { maxSessions: max } : {};
  }

  /** `POST /v1/bash/sessions/{id}/close`. */
  async closeBashSession(id: string, options: AioRequestOptions = {}): Promise<void> {
    await this.call(
      'POST',
      `/v1/bash/sessions/${encodeURIComponent(id)}/close`,
      undefined,
      options,
    );
  }

  /** `POST /v1/bash/exec` without a session id: a fresh session for this one command. */
  async bashExec(
    request: { command: string; env: Readonly<Record<string, string>>; hardTimeout: number },
    options: AioRequestOptions = {},
  ): Promise<BashExecResult> {
    const env = await this.call(
      'POST',
      '/v1/bash/exec',
      { command: request.command, env: request.env, hard_timeout: request.hardTimeout },
      options,
    );
    const data = asObject(env.data) ?? {};
    return {
      sessionId: str(data.session_id),
      status: str(data.status),
      stdout: nullableStr(data.stdout),
      stderr: nullableStr(data.stderr),
      exitCode: int(data.exit_code),
    };
  }

  /** `POST /v1/bash/exec` with `async_mode`: starts the command in a fresh session, at once. */
  async bashStart(
    request: {
      command: string;
      env?: Readonly<Record<string, string>> | undefined;
      execDir?: string | undefined;
    },
    options: AioRequestOptions = {},
  ): Promise<{ sessionId: string; commandId: string | undefined }> {
    const env = await this.call(
      'POST',
      '/v1/bash/exec',
      {
        command: request.command,
        async_mode: true,
        ...(request.env ? { env: request.env } : {}),
        ...(request.execDir ? { exec_dir: request.execDir } : {}),
      },
      options,
    );
    const data = asObject(env.data) ?? {};
    const sessionId = str(data.session_id);
    if (sessionId === undefined) {
      throw new AioHttpError('POST /v1/bash/exec answered no session_id', {
        method: 'POST',
        url: this.http.baseUrl + '/v1/bash/exec',
      });
    }
    return { sessionId, commandId: str(data.command_id) };
  }

  /** `POST /v1/bash/output`: output after the byte offsets; `waitSeconds` long-polls for more. */
  async bashOutput(
    request: {
      sessionId: string;
      commandId?: string | undefined;
      offset: number;
      stderrOffset: number;
      waitSeconds: number;
    },
    options: AioRequestOptions = {},
  ): Promise<BashOutput> {
    const env = await this.call(
      'POST',
      '/v1/bash/output',
      {
        session_id: request.sessionId,
        ...(request.commandId ? { command_id: request.commandId } : {}),
        offset: request.offset,
        stderr_offset: request.stderrOffset,
        wait: request.waitSeconds > 0,
        wait_timeout: request.waitSeconds,
      },
      options,
    );
    const data = asObject(env.data) ?? {};
    const command = asObject(data.command) ?? {};
    return {
      stdout: str(data.stdout) ?? '',
      stderr: str(data.stderr) ?? '',
      offset: int(data.offset) ?? request.offset,
      stderrOffset: int(data.stderr_offset) ?? request.stderrOffset,
      status: str(command.status),
      exitCode: int(command.exit_code),
    };
  }

  /** `POST /v1/bash/write`: text to the running command's standard input. */
  async bashWrite(
    request: { sessionId: string; commandId?: string | undefined; input: string },
    options: AioRequestOptions = {},
  ): Promise<void> {
    await this.call(
      'POST',
      '/v1/bash/write',
      {
        session_id: request.sessionId,
        ...(request.commandId ? { command_id: request.commandId } : {}),
        input: request.input,
      },
      options,
    );
  }

  /** `POST /v1/bash/kill`: signals the session's running command. */
  async bashKill(
    request: { sessionId: string; signal: 'SIGTERM' | 'SIGKILL' | 'SIGINT' },
    options: AioRequestOptions = {},
  ): Promise<void> {
    await this.call(
      'POST',
      '/v1/bash/kill',
      { session_id: request.sessionId, signal: request.signal },
      options,
    );
  }

  /** `start`: 0-based first line; `end`: exclusive. */
  async readFile(
    file: string,
    range: { start?: number; end?: number },
    options: AioRequestOptions = {},
  ): Promise<string> {
    const body: Json = { file };
    if (range.start !== undefined) body.start_line = range.start;
    if (range.end !== undefined) body.end_line = range.end;
    const data = asObject(await this.fileCall('/v1/file/read', body, 'read', file, options));
    return str(data?.content) ?? '';
  }

  async writeFile(
    file: string,
    content: string,
    encoding: 'utf-8' | 'base64',
    options: AioRequestOptions = {},
  ): Promise<void> {
    const body: Json = { file, content };
    if (encoding === 'base64') body.encoding = 'base64';
    await this.fileCall('/v1/file/write', body, 'write', file, options);
  }

  async findFiles(path: string, glob: string, options: AioRequestOptions = {}): Promise<string[]> {
    const data = asObject(
      await this.fileCall('/v1/file/find', { path, glob }, 'glob', path, options),
    );
    const files = Array.isArray(data?.files) ? data.files : [];
    return files.filter((f): f is string => typeof f === 'string');
  }

  /**
   * `POST /v1/file/glob`: the recursive glob (`**` spans directories), files only unless
   * `filesOnly` is false. An image without the endpoint answers 404 (an `AioHttpError`).
   */
  async globFiles(
    request: { path: string; pattern: string; filesOnly: boolean; maxResults: number },
    options: AioRequestOptions = {},
  ): Promise<{ paths: string[]; truncated: boolean }> {
    const body: Json = {
      path: request.path,
      pattern: request.pattern,
      include_hidden: true,
      files_only: request.filesOnly,
      max_results: request.maxResults,
    };
    // A 404 (no such endpoint on this image) propagates as an AioHttpError: the caller falls back.
    const res = await this.http.json('POST', '/v1/file/glob', body, options);
    const env = this.envelope('POST', '/v1/file/glob', res.body);
    if (!env.success) {
      const data = asObject(env.data);
      throw fileErrorFor(
        {
          errnoName: str(data?.errno_name),
          errorType: str(data?.error_type),
          message: str(data?.message) ?? env.message,
        },
        request.path,
        'glob',
      );
    }
    const data = asObject(env.data);
    const files = Array.isArray(data?.files) ? data.files : [];
    const paths: string[] = [];
    for (const f of files) {
      const p = str(asObject(f)?.path);
      if (p !== undefined) paths.push(p);
    }
    return { paths, truncated: data?.truncated === true };
  }

  async listFiles(path: string, options: AioRequestOptions = {}): Promise<ListedFile[]> {
    const data = asObject(
      await this.fileCall(
        '/v1/file/list',
        { path, recursive: true, show_hidden: true },
        'glob',
        path,
        options,
      ),
    );
    const files = Array.isArray(data?.files) ? data.files : [];
    const out: ListedFile[] = [];
    for (const f of files) {
      const o = asObject(f);
      const p = str(o?.path);
      if (o && p !== undefined) out.push({ path: p, isDirectory: o.is_directory === true });
    }
    return out;
  }

  async grep(
    request: {
      path: string;
      pattern: string;
      caseInsensitive: boolean;
      fixedStrings: boolean;
      maxResults: number;
      include?: string[];
    },
    options: AioRequestOptions = {},
  ): Promise<{ matches: GrepApiMatch[]; truncated: boolean }> {
    const body: Json = {
      path: request.path,
      pattern: request.pattern,
      case_insensitive: request.caseInsensitive,
      fixed_strings: request.fixedStrings,
      max_results: request.maxResults,
      max_file_size: '1M',
      recursive: true,
    };
    if (request.include && request.include.length > 0) body.include = request.include;
    const data = asObject(
      await this.fileCall('/v1/file/grep', body, 'grep', request.path, options),
    );
    const raw = Array.isArray(data?.matches) ? data.matches : [];
    const matches: GrepApiMatch[] = [];
    for (const m of raw) {
      const o = asObject(m);
      const file = str(o?.file);
      const lineNumber = int(o?.line_number);
      const lineContent = str(o?.line_content);
      if (file !== undefined && lineNumber !== null && lineContent !== undefined) {
        matches.push({ file, lineNumber, lineContent });
      }
    }
    return { matches, truncated: data?.truncated === true };
  }

  /** Raw bytes of `path`; an HTTP 404 is a missing file, other failures an I/O error. */
  async download(
    path: string,
    limits: { maxBytes: number; tooLarge: () => Error },
    options: AioRequestOptions = {},
  ): Promise<Uint8Array> {
    try {
      return await this.http.bytes('/v1/file/download', {
        ...options,
        query: { path },
        maxBytes: limits.maxBytes,
        tooLarge: limits.tooLarge,
      });
    } catch (err) {
      if (err instanceof AioHttpError && err.status === 404) {
        throw new SandboxFileNotFoundError(
          `No such file or directory: ${path}`,
          { path, operation: 'download', kind: 'ENOENT' },
          { cause: err },
        );
      }
      throw err;
    }
  }
}
