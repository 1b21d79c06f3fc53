import { AioHttpError } from './aio-http-error.js';
import type { AioHttpClient, AioRequestOptions } from './aio-http.js';
import { asObject, callAio, int, nullableStr, str, type Envelope } from './aio-envelope.js';

/*
 * The image's pipe-based bash API (`/v1/bash/*`): commands with separate streams, each in a bash
 * session; output read by byte offset; input and signals by session.
 */

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
  /** The command's text and id, as the image reports its current or latest command. */
  command: string | undefined;
  commandId: string | undefined;
}

/** One `GET /v1/bash/sessions` entry (the fields sbx reads). */
export interface BashSessionListing {
  sessionId: string;
  /** The command running in it, when one is. */
  currentCommand: string | undefined;
}

export class AioBashApi {
  constructor(readonly http: AioHttpClient) {}

  private call(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    body: unknown,
    options: AioRequestOptions,
  ): Promise<Envelope> {
    return callAio(this.http, method, path, body, options);
  }

  /** `POST /v1/bash/sessions/{id}/close`. */
  async closeSession(id: string, options: AioRequestOptions = {}): Promise<void> {
    await this.call(
      'POST',
      `/v1/bash/sessions/${encodeURIComponent(id)}/close`,
      undefined,
      options,
    );
  }

  /** `POST /v1/bash/exec` without a session id: a fresh session for this one command. */
  async exec(
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
  async start(
    request: {
      command: string;
      env?: Readonly<Record<string, string>> | undefined;
      execDir?: string | undefined;
      /** A session made with `createSession`; absent, the image opens a fresh one. */
      sessionId?: string | undefined;
      /** Seconds after which the image kills the command (`timed_out`); absent, no limit. */
      hardTimeout?: number | undefined;
    },
    options: AioRequestOptions = {},
  ): Promise<{ sessionId: string; commandId: string | undefined }> {
    const env = await this.call(
      'POST',
      '/v1/bash/exec',
      {
        ...(request.sessionId ? { session_id: request.sessionId } : {}),
        command: request.command,
        async_mode: true,
        ...(request.env ? { env: request.env } : {}),
        ...(request.execDir ? { exec_dir: request.execDir } : {}),
        ...(request.hardTimeout ? { hard_timeout: request.hardTimeout } : {}),
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
  async output(
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
      command: str(command.command),
      commandId: str(command.command_id),
    };
  }

  /** `POST /v1/bash/write`: text to the running command's standard input. */
  async write(
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
  async kill(
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

  /** `POST /v1/bash/sessions/create`: a session of the caller's id. */
  async createSession(sessionId: string, options: AioRequestOptions = {}): Promise<void> {
    await this.call('POST', '/v1/bash/sessions/create', { session_id: sessionId }, options);
  }

  /** `GET /v1/bash/sessions`: the open sessions (entries without a string id are skipped). */
  async sessions(options: AioRequestOptions = {}): Promise<BashSessionListing[]> {
    const env = await this.call('GET', '/v1/bash/sessions', undefined, options);
    const entries = Array.isArray(env.data) ? env.data : [];
    const listed: BashSessionListing[] = [];
    for (const entry of entries) {
      const info = asObject(entry);
      const sessionId = str(info?.session_id);
      if (sessionId !== undefined) {
        listed.push({ sessionId, currentCommand: str(info?.current_command) });
      }
    }
    return listed;
  }
}
