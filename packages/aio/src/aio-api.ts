import { SandboxFileError, SandboxFileNotFoundError } from '@sbx/core';
import { AioHttpError } from './aio-http-error.js';
import { AioBashApi } from './aio-bash-api.js';
import {
  asObject,
  callAio,
  int,
  nullableStr,
  readEnvelope,
  str,
  type Envelope,
  type Json,
} from './aio-envelope.js';
import type { AioHttpClient, AioRequestOptions } from './aio-http.js';
import { fileErrorFor } from './file-errors.js';

export type { BashExecResult, BashOutput } from './aio-bash-api.js';

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

export class AioApi {
  /** The image's pipe-based bash API (`/v1/bash/*`). */
  readonly bash: AioBashApi;

  constructor(readonly http: AioHttpClient) {
    this.bash = new AioBashApi(http);
  }

  private call(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    body: unknown,
    options: AioRequestOptions,
  ): Promise<Envelope> {
    return callAio(this.http, method, path, body, options);
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
    const env = readEnvelope(this.http, 'POST', path, res.body);
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
    const env = readEnvelope(this.http, 'POST', '/v1/file/glob', res.body);
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
