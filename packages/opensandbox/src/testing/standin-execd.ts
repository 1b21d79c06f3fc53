import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ExecdEvent } from './execd-output.js';
import { ExecdLineSplitter, finalEvent } from './execd-output.js';
import type { HostShellMachine } from './host-shell-machine.js';
import { MachineFileError } from './host-shell-machine.js';
import { error, headerOf, readBody, readJson } from './standin-http.js';

/** A command request as execd received it, recorded for the tests. */
export interface StandinCommandRequest {
  readonly sandboxId: string;
  readonly body: {
    command?: string;
    cwd?: string;
    background?: boolean;
    timeout?: number;
    envs?: Record<string, string>;
  };
}

/** What execd needs of a stand-in sandbox: its id and the machine its commands and files use. */
export interface ExecdSandbox {
  readonly id: string;
  readonly machine: HostShellMachine;
}

/**
 * The execd API of the OpenSandbox stand-in, played as the real one behaves, for every sandbox
 * (through the server proxy or on the sandbox's own listener): `POST /command` streams JSON events
 * separated by blank lines (init, one event per output line, then an error carrying the exit
 * status or a completion event), kills the command's process group when its `timeout`
 * (milliseconds) elapses or the client goes away; `DELETE /command?id=` interrupts a running
 * command; `GET /files/download` answers 404 for a missing file and 500 with the OS error
 * otherwise; `POST /files/upload` takes multipart `metadata` + `file` parts, creates parent
 * directories and applies the mode.
 */
export class StandinExecd {
  readonly #commandRequests: StandinCommandRequest[];
  /** Running commands by execd id, for `DELETE /command?id=` (interrupt). */
  readonly #running = new Map<string, AbortController>();

  /** Every command request is appended to `commandRequests`. */
  constructor(commandRequests: StandinCommandRequest[]) {
    this.#commandRequests = commandRequests;
  }

  /** Serves one execd request of `sandbox` (`path` is execd's own, past any proxy prefix). */
  async serve(
    sandbox: ExecdSandbox,
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    query: URLSearchParams,
  ): Promise<void> {
    if (path === '/ping' && req.method === 'GET') {
      res.writeHead(200).end();
      return;
    }
    if (path === '/command' && req.method === 'POST') return this.#command(sandbox, req, res);
    if (path === '/command' && req.method === 'DELETE') {
      // execd's interrupt: kills the running command of that id.
      const running = this.#running.get(query.get('id') ?? '');
      if (running === undefined) {
        error(res, 404, 'NOT_FOUND', `no running command ${query.get('id') ?? ''}`);
        return;
      }
      running.abort();
      res.writeHead(200).end();
      return;
    }
    if (path === '/files/download' && req.method === 'GET') {
      const target = query.get('path');
      if (!target) {
        error(res, 400, 'MISSING_QUERY', "missing query parameter 'path'");
        return;
      }
      try {
        const bytes = await sandbox.machine.readBytes(target);
        res.writeHead(200, {
          'content-type': 'application/octet-stream',
          'content-length': bytes.byteLength,
        });
        res.end(Buffer.from(bytes));
      } catch (e) {
        fileError(res, e);
      }
      return;
    }
    if (path === '/files/upload' && req.method === 'POST') return this.#upload(sandbox, req, res);
    error(res, 404, 'NOT_FOUND', `no execd route for ${req.method} ${path}`);
  }

  async #command(sandbox: ExecdSandbox, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = (await readJson(req)) as StandinCommandRequest['body'] | undefined;
    if (body === undefined || typeof body.command !== 'string' || body.command.trim() === '') {
      error(res, 400, 'INVALID_REQUEST', 'command is required');
      return;
    }
    this.#commandRequests.push({ sandboxId: sandbox.id, body });
    const commandId = randomUUID().replaceAll('-', '');
    const send = (event: ExecdEvent): void => {
      res.write(`${JSON.stringify(event)}\n\n`);
    };
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    // A client that goes away cancels the command, as execd's request context does.
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) gone.abort();
    });
    this.#running.set(commandId, gone);
    res.on('close', () => this.#running.delete(commandId));
    send({ type: 'init', text: commandId, timestamp: Date.now() });
    send({ type: 'ping', text: 'pong', timestamp: Date.now() });
    // execd tails the output as the command writes it: one event per completed line, at once.
    const outLines = new ExecdLineSplitter();
    const errLines = new ExecdLineSplitter();
    const emit = (type: 'stdout' | 'stderr', lines: string[]): void => {
      for (const text of lines) send({ type, text, timestamp: Date.now() });
    };
    const result = await sandbox.machine.run(body.command, {
      envs: body.envs ?? {},
      timeoutMs: typeof body.timeout === 'number' ? body.timeout : 0,
      ...(body.cwd ? { cwd: body.cwd } : {}),
      signal: gone.signal,
      onStdout: (text) => emit('stdout', outLines.push(text)),
      onStderr: (text) => emit('stderr', errLines.push(text)),
    });
    emit('stdout', outLines.flush());
    emit('stderr', errLines.flush());
    send(
      finalEvent(
        { exitCode: result.exitCode, waitError: result.waitError, elapsedMs: result.elapsedMs },
        Date.now(),
      ),
    );
    res.end();
  }

  async #upload(sandbox: ExecdSandbox, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    let form: FormData;
    try {
      form = await new Response(body, {
        headers: { 'content-type': headerOf(req, 'content-type') ?? '' },
      }).formData();
    } catch {
      error(res, 400, 'INVALID_FILE', 'multipart form is empty');
      return;
    }
    const metadata = form.getAll('metadata');
    const files = form.getAll('file');
    if (metadata.length === 0 || files.length !== metadata.length) {
      error(res, 400, 'INVALID_FILE', 'metadata and file parts must pair up');
      return;
    }
    for (const [index, part] of metadata.entries()) {
      const metaText = typeof part === 'string' ? part : await part.text();
      let meta: { path?: unknown; mode?: unknown };
      try {
        meta = JSON.parse(metaText) as { path?: unknown; mode?: unknown };
      } catch {
        error(res, 400, 'INVALID_FILE_METADATA', 'invalid metadata format');
        return;
      }
      if (typeof meta.path !== 'string' || meta.path === '') {
        error(res, 400, 'INVALID_FILE_METADATA', 'metadata path is empty');
        return;
      }
      const file = files[index]!;
      const data =
        typeof file === 'string'
          ? new TextEncoder().encode(file)
          : new Uint8Array(await file.arrayBuffer());
      try {
        await sandbox.machine.writeBytes(
          meta.path,
          data,
          typeof meta.mode === 'number' ? meta.mode : 755,
        );
      } catch (e) {
        fileError(res, e);
        return;
      }
    }
    res.writeHead(200).end();
  }
}

/** A machine's file error as execd answers it (its status and code), anything else as a 500. */
function fileError(res: ServerResponse, e: unknown): void {
  if (e instanceof MachineFileError) error(res, e.status, e.code, e.message);
  else error(res, 500, 'RUNTIME_ERROR', e instanceof Error ? e.message : String(e));
}
