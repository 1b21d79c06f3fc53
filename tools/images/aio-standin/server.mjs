// A stand-in for the all-in-one sandbox image's HTTP API: the subset @sbx/aio uses, with real
// shell sessions, real files and real processes, behaving as the image does (agent-infra/sandbox
// 1.9.3–1.11.0; see README.md for what is modelled and the differences). Plain Node, no
// dependencies, so it runs in the locally assembled image (tools/images/build-images.sh) and
// in-process in unit tests.
//
//   SBX_AIO_PORT=18080 node server.mjs          # listens on 127.0.0.1:18080
//
// Environment switches (see README.md beside this file):
//   SBX_AIO_HOST                       listen address (default 127.0.0.1)
//   SBX_AIO_PORT                       listen port (default 8080)
//   SBX_AIO_HOME                       home_dir reported by GET /v1/sandbox (default $HOME or /root)
//   SANDBOX_API_KEY                    when set, every request needs it (X-AIO-API-Key,
//                                      Authorization: Bearer, or ?api_key=), as in the image
//   MAX_SHELL_SESSIONS                 shell session cap (default 10, as in 1.9.3–1.11.0)
//   SHELL_SESSION_TIMEOUT              idle seconds before a session expires (default 3600)
//   SBX_AIO_STANDIN_NO_BASH_API=1      every /v1/bash/* answers 404, like images before 1.9.x
//   SBX_AIO_STANDIN_NO_GLOB_API=1      /v1/file/glob answers 404, like images before it existed
//   SBX_AIO_STANDIN_ERROR_OBSERVATION  a trigger text: a shell command containing it runs, then
//                                      leaves its session corrupted; a bash/exec command containing
//                                      it answers the corruption signature (see README)
//   SBX_AIO_STANDIN_SHELL              shell for sessions (default: busybox sh when present)
//   SBX_AIO_STANDIN_STOP_DELAY_MS      on SIGTERM keep serving this long before shutting down
//                                      (a container whose stop outlasts an ownership lease)
import { spawn } from 'node:child_process';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { BashCommands } from './bash-commands.mjs';
import { createFileApi } from './file-api.mjs';
import { notFound, ok, readBody, send, unprocessable } from './http-util.mjs';
import { SessionLimitError, SessionTable } from './session-table.mjs';
import { SHELL_OUTPUT_LIMIT, killGroup } from './shell-session.mjs';

/** The text the real image prints when its default shell session is corrupted. */
export const ERROR_OBSERVATION_SIGNATURE = "'ErrorObservation' object has no attribute 'exit_code'";

async function findBusybox() {
  for (const candidate of ['/bin/busybox', '/usr/bin/busybox', '/usr/local/bin/busybox']) {
    try {
      await fs.access(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // next candidate
    }
  }
  return undefined;
}

/**
 * The session shell. busybox ash in interactive mode survives a syntax error in `eval` (a
 * non-interactive ash or dash exits on it, which would kill the session); it is what the image has.
 */
async function defaultShell() {
  const configured = process.env.SBX_AIO_STANDIN_SHELL;
  if (configured) return { file: configured, args: ['-i'], commandShell: configured };
  const busybox = await findBusybox();
  if (busybox) return { file: busybox, args: ['sh', '-i'], commandShell: busybox, shArg: 'sh' };
  return { file: '/bin/sh', args: ['-i'], commandShell: '/bin/sh' };
}

function envNumber(name) {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : undefined;
}

/** Constant-time comparison of a presented key with the configured one. */
function keyMatches(presented, expected) {
  if (typeof presented !== 'string') return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function presentedKey(req, url) {
  const header = req.headers['x-aio-api-key'];
  if (typeof header === 'string') return header;
  const auth = req.headers.authorization;
  if (typeof auth === 'string' && auth.startsWith('Bearer ')) return auth.slice('Bearer '.length);
  return url.searchParams.get('api_key') ?? undefined;
}

/**
 * Creates the stand-in. `handler` serves one request; `close()` ends every session.
 *
 * Options: `homeDir`, `bashApi` (false: 404 on /v1/bash/*), `globApi` (false: 404 on
 * /v1/file/glob), `errorObservationTrigger`, `shell` (`{ file, args, commandShell, shArg? }`),
 * `env` (base environment of commands), `apiKey`, `maxSessions`, `sessionTimeoutSeconds`.
 */
export function createAioStandin(options = {}) {
  const homeDir = options.homeDir ?? process.env.SBX_AIO_HOME ?? process.env.HOME ?? '/root';
  const bashApi = options.bashApi ?? process.env.SBX_AIO_STANDIN_NO_BASH_API !== '1';
  const globApi = options.globApi ?? process.env.SBX_AIO_STANDIN_NO_GLOB_API !== '1';
  const apiKey = options.apiKey ?? (process.env.SANDBOX_API_KEY || undefined);
  const trigger =
    options.errorObservationTrigger ?? process.env.SBX_AIO_STANDIN_ERROR_OBSERVATION ?? '';
  const baseEnv = options.env ?? { ...process.env };
  const shellPromise = options.shell ? Promise.resolve(options.shell) : defaultShell();
  const table = new SessionTable({
    shell: shellPromise,
    cwd: homeDir,
    env: baseEnv,
    maxSessions: options.maxSessions ?? envNumber('MAX_SHELL_SESSIONS'),
    sessionTimeoutSeconds: options.sessionTimeoutSeconds ?? envNumber('SHELL_SESSION_TIMEOUT'),
  });
  const files = createFileApi({ shellPromise });
  /** bash/exec sessions still open (the image keeps them until closed or idle for an hour). */
  const bashSessions = new Set();
  const bashCommands = new BashCommands({ shellPromise, homeDir, baseEnv });
  const requests = [];
  let closed = false;

  /** A `BashSessionInfo`: `current_command` only while a command runs in the session. */
  function bashSessionInfo(id, workingDir) {
    const record = bashCommands.get(id);
    const at = new Date().toISOString();
    return {
      session_id: id,
      status: 'ready',
      working_dir: workingDir ?? homeDir,
      created_at: at,
      last_used_at: at,
      ...(record && record.status === 'running' ? { current_command: record.command } : {}),
      command_count: record ? 1 : 0,
    };
  }

  function sessionLimit(res, err) {
    send(res, 400, { detail: err.message });
  }

  async function shellExec(res, body) {
    if (typeof body.command !== 'string') return unprocessable(res, 'command is required');
    let session;
    if (body.id) {
      session = table.get(body.id);
      if (!session) return notFound(res, `Session not found: ${body.id}`);
      if (session.busy) {
        return send(res, 400, { detail: `Session ${body.id} has a running command` });
      }
    } else {
      // No default session: a call without an id gets a session of its own, which stays.
      try {
        session = await table.create();
      } catch (err) {
        if (err instanceof SessionLimitError) return sessionLimit(res, err);
        throw err;
      }
    }
    if (session.corrupted) {
      return ok(res, {
        session_id: session.id,
        command: body.command,
        status: 'completed',
        output: `Command failed: ${ERROR_OBSERVATION_SIGNATURE}`,
        console: [],
        exit_code: null,
      });
    }
    const result = await session.exec(body.command, {
      noChangeTimeout: Number(body.no_change_timeout) || 120,
      hardTimeout: Number(body.hard_timeout) || 0,
    });
    // The trigger runs normally and leaves its session broken, as concurrent use does in the image.
    if (trigger && body.command.includes(trigger)) session.corrupted = true;
    const output =
      body.truncate === false || result.output.length <= SHELL_OUTPUT_LIMIT
        ? result.output
        : result.output.slice(0, SHELL_OUTPUT_LIMIT);
    ok(res, {
      session_id: session.id,
      command: body.command,
      status: result.status,
      output,
      console: [],
      exit_code: result.exitCode,
    });
  }

  async function bashExec(res, body) {
    if (typeof body.command !== 'string') return unprocessable(res, 'command is required');
    const env = { ...baseEnv };
    for (const [k, v] of Object.entries(body.env ?? {})) env[k] = String(v);
    if (body.async_mode === true) {
      const sessionId = body.session_id || randomUUID();
      bashSessions.add(sessionId);
      let record;
      try {
        record = await bashCommands.start(sessionId, {
          command: body.command,
          env: body.env ?? {},
          execDir: typeof body.exec_dir === 'string' ? body.exec_dir : undefined,
          hardTimeout: Number(body.hard_timeout) || 0,
        });
      } catch (err) {
        return send(res, 400, { detail: String(err.message) });
      }
      return ok(res, {
        session_id: sessionId,
        command_id: record.commandId,
        command: body.command,
        status: 'running',
        stdout: '',
        stderr: '',
        exit_code: null,
        offset: 0,
        stderr_offset: 0,
      });
    }
    const sessionId = randomUUID();
    bashSessions.add(sessionId);
    const commandId = randomUUID();
    if (trigger && body.command.includes(trigger)) {
      return ok(res, {
        session_id: sessionId,
        command_id: commandId,
        command: body.command,
        status: 'completed',
        stdout: '',
        stderr: `Command failed: ${ERROR_OBSERVATION_SIGNATURE}`,
        exit_code: null,
        offset: 0,
        stderr_offset: 0,
      });
    }
    const shell = await shellPromise;
    const args = shell.shArg ? [shell.shArg, '-c', body.command] : ['-c', body.command];
    const child = spawn(shell.commandShell, args, {
      cwd: typeof body.exec_dir === 'string' && body.exec_dir ? body.exec_dir : homeDir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c) => (stderr += c));
    let timedOut = false;
    const hard = Number(body.hard_timeout) || 0;
    const timer = hard
      ? setTimeout(() => {
          timedOut = true;
          killGroup(child);
        }, hard * 1000)
      : undefined;
    const exitCode = await new Promise((resolve) => {
      child.once('close', (code) => resolve(code));
      child.once('error', () => resolve(127));
    });
    clearTimeout(timer);
    ok(res, {
      session_id: sessionId,
      command_id: commandId,
      command: body.command,
      status: timedOut ? 'timed_out' : 'completed',
      stdout,
      stderr,
      exit_code: timedOut ? null : exitCode,
      offset: stdout.length,
      stderr_offset: stderr.length,
    });
  }

  async function route(req, res) {
    const url = new URL(req.url ?? '/', 'http://standin');
    const p = url.pathname;
    const method = req.method ?? 'GET';
    if (apiKey !== undefined && !keyMatches(presentedKey(req, url), apiKey)) {
      requests.push({ method, path: p, query: url.search, body: {} });
      return send(res, 401, { detail: 'Invalid or missing API key' });
    }
    const body = method === 'POST' ? await readBody(req) : {};
    requests.push({ method, path: p, query: url.search, body });
    if (closed) return send(res, 503, { detail: 'shutting down' });
    if (p.startsWith('/v1/bash/') && !bashApi) return notFound(res);
    if (method === 'GET' && p === '/v1/sandbox') {
      return send(res, 200, {
        success: true,
        message: 'Operation successful',
        data: null,
        hint: null,
        home_dir: homeDir,
        workspace: homeDir,
        version: 'sbx-aio-standin',
        detail: { system: { os: process.platform, arch: process.arch } },
      });
    }
    if (method === 'POST' && p === '/v1/shell/exec') return shellExec(res, body);
    if (method === 'POST' && p === '/v1/shell/sessions/create') {
      const id = typeof body.id === 'string' && body.id ? body.id : randomUUID();
      try {
        await table.create(id);
      } catch (err) {
        if (err instanceof SessionLimitError) return sessionLimit(res, err);
        throw err;
      }
      return ok(res, { session_id: id, working_dir: homeDir });
    }
    if (method === 'GET' && p === '/v1/shell/sessions/stats') return ok(res, table.stats());
    if (method === 'GET' && p === '/v1/shell/sessions') {
      return ok(res, { sessions: Object.fromEntries(table.ids().map((id) => [id, {}])) });
    }
    if (method === 'POST' && p === '/v1/shell/kill') {
      const session = table.get(body.id);
      if (!session) return notFound(res, `Session not found: ${body.id}`);
      const killed = await session.kill();
      return ok(res, { status: killed.status, exit_code: killed.exitCode });
    }
    const sessionRoute = /^\/v1\/shell\/sessions\/([^/]+)$/.exec(p);
    if (method === 'DELETE' && sessionRoute) {
      const id = decodeURIComponent(sessionRoute[1]);
      // The image answers 200 with success: false for an unknown session, not 404.
      if (!(await table.delete(id))) {
        return send(res, 200, { success: false, message: `Session not found: ${id}`, data: null });
      }
      return ok(res, null, { message: `Session ${id} cleaned up` });
    }
    if (method === 'POST' && p === '/v1/bash/exec') return bashExec(res, body);
    if (method === 'POST' && p === '/v1/bash/output') {
      const data = await bashCommands.output(String(body.session_id ?? ''), {
        offset: Number(body.offset) || 0,
        stderrOffset: Number(body.stderr_offset) || 0,
        wait: body.wait === true,
        waitTimeout: body.wait_timeout ?? 30,
      });
      if (!data) return notFound(res, `Session not found: ${body.session_id}`);
      return ok(res, data);
    }
    if (method === 'POST' && p === '/v1/bash/write') {
      if (typeof body.input !== 'string') return unprocessable(res, 'input is required');
      if (!bashCommands.write(String(body.session_id ?? ''), body.input)) {
        return send(res, 400, { detail: `No running command in session ${body.session_id}` });
      }
      return ok(res, null);
    }
    if (method === 'POST' && p === '/v1/bash/kill') {
      const signal = ['SIGTERM', 'SIGKILL', 'SIGINT'].includes(body.signal)
        ? body.signal
        : 'SIGTERM';
      if (!bashCommands.kill(String(body.session_id ?? ''), signal)) {
        return send(res, 400, { detail: `No running command in session ${body.session_id}` });
      }
      return ok(res, null);
    }
    if (method === 'POST' && p === '/v1/bash/sessions/create') {
      const id =
        typeof body.session_id === 'string' && body.session_id ? body.session_id : randomUUID();
      bashSessions.add(id);
      return ok(
        res,
        bashSessionInfo(id, typeof body.exec_dir === 'string' ? body.exec_dir : undefined),
      );
    }
    if (method === 'GET' && p === '/v1/bash/sessions') {
      return ok(
        res,
        [...bashSessions].map((id) => bashSessionInfo(id)),
      );
    }
    const bashClose = /^\/v1\/bash\/sessions\/([^/]+)\/close$/.exec(p);
    if (method === 'POST' && bashClose) {
      const id = decodeURIComponent(bashClose[1]);
      if (!bashSessions.delete(id)) {
        return send(res, 200, { success: false, message: `Session not found: ${id}`, data: null });
      }
      bashCommands.close(id);
      return ok(res, null, { message: `Session ${id} closed` });
    }
    if (method === 'POST' && p === '/v1/file/glob' && !globApi) return notFound(res);
    const fileHandler = files[`${method} ${p}`];
    if (fileHandler) return fileHandler(res, body);
    if (method === 'GET' && p === '/v1/file/download') return files.download(res, url);
    return notFound(res);
  }

  function handler(req, res) {
    route(req, res).catch((err) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const status = err instanceof SyntaxError ? 422 : 500;
      send(res, status, { detail: String(err?.message ?? err) });
    });
  }

  return {
    handler,
    /** Every request received, in order: `{ method, path, query, body }`. */
    requests,
    /** Live shell session ids. */
    sessionIds: () => table.ids(),
    /** Shell session ids dropped to make room for new ones, in order. */
    evictedSessionIds: () => [...table.evicted],
    /** bash/exec sessions not yet closed. */
    openBashSessionIds: () => [...bashSessions],
    async close() {
      closed = true;
      bashCommands.closeAll();
      await table.closeAll();
    },
  };
}

/** Creates the stand-in and listens; resolves once it accepts connections. */
export async function startAioStandin(options = {}) {
  const standin = createAioStandin(options);
  const server = http.createServer(standin.handler);
  server.keepAliveTimeout = 30_000;
  const host = options.host ?? '127.0.0.1';
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address();
  return {
    ...standin,
    server,
    port,
    url: `http://${host}:${port}`,
    async close() {
      // Like a container going away: requests still in flight lose their connection (a client
      // sees a transport failure), they never get a made-up answer from a dying shell.
      server.closeAllConnections();
      await standin.close();
      await new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

const isMain = process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isMain) {
  const port = Number(process.env.SBX_AIO_PORT || 8080);
  const host = process.env.SBX_AIO_HOST || '127.0.0.1';
  const running = await startAioStandin({ host, port });
  process.stdout.write(`aio stand-in listening on ${running.url}\n`);
  // As PID 1 in a container, Node has no default SIGTERM handler: without this, `docker stop`
  // would wait out its whole grace period.
  const stopDelayMs = Number(process.env.SBX_AIO_STANDIN_STOP_DELAY_MS || 0);
  let stopping = false;
  const shutdown = () => {
    if (stopping) return;
    stopping = true;
    const close = () =>
      running.close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    if (stopDelayMs > 0) {
      process.stdout.write(`aio stand-in stopping in ${stopDelayMs} ms\n`);
      setTimeout(close, stopDelayMs);
    } else {
      close();
    }
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}
