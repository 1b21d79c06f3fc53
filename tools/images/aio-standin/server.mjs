// A stand-in for the all-in-one sandbox image's HTTP API: the subset @sbx/aio uses, with real
// shell sessions, real files and real processes. Plain Node, no dependencies, so it runs in the
// locally assembled image (tools/images/build-images.sh) and in-process in unit tests.
//
//   SBX_AIO_PORT=18080 node server.mjs          # listens on 127.0.0.1:18080
//
// Environment switches (see README.md beside this file):
//   SBX_AIO_HOST                       listen address (default 127.0.0.1)
//   SBX_AIO_PORT                       listen port (default 8080)
//   SBX_AIO_HOME                       home_dir reported by GET /v1/sandbox (default $HOME or /root)
//   SBX_AIO_STANDIN_NO_BASH_API=1      every /v1/bash/* answers 404, like images before 1.9.x
//   SBX_AIO_STANDIN_ERROR_OBSERVATION  a trigger text: a shell command containing it runs, then
//                                      leaves its session corrupted; a bash/exec command containing
//                                      it answers the corruption signature (see README)
//   SBX_AIO_STANDIN_SHELL              shell for sessions (default: busybox sh when present)
//   SBX_AIO_STANDIN_STOP_DELAY_MS      on SIGTERM keep serving this long before shutting down
//                                      (a container whose stop outlasts an ownership lease)
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { constants as fsConstants, createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** The text the real image prints when its default shell session is corrupted. */
export const ERROR_OBSERVATION_SIGNATURE = "'ErrorObservation' object has no attribute 'exit_code'";

const MAX_BODY_BYTES = 256 * 1024 * 1024;
const BINARY_SNIFF_BYTES = 8192;
const GREP_BATCH = 200;

// ---------------------------------------------------------------------------------------------
// small helpers

function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function ok(res, data, extra = {}) {
  send(res, 200, { success: true, message: 'Operation successful', data, hint: null, ...extra });
}

function notFound(res, detail = 'Not Found') {
  send(res, 404, { detail });
}

function unprocessable(res, msg) {
  send(res, 422, { detail: [{ type: 'value_error', loc: ['body'], msg, input: null }] });
}

const ERROR_TYPES = {
  ENOENT: 'not_found',
  ENOTDIR: 'not_a_directory',
  EISDIR: 'is_a_directory',
  EACCES: 'permission_denied',
  EPERM: 'permission_denied',
  EROFS: 'read_only',
};

/** The image's file-operation failure: HTTP 200, `success: false`, a FileOperationError payload. */
function fileFailure(res, operation, filePath, err) {
  const errnoName = typeof err?.code === 'string' ? err.code : null;
  const message = errnoName
    ? `${errnoName}: ${err.message.replace(/^[A-Z]+: /, '')}`
    : String(err?.message ?? err);
  send(res, 200, {
    success: false,
    message,
    data: {
      path: filePath,
      operation,
      message,
      error_type: (errnoName && ERROR_TYPES[errnoName]) || 'io_error',
      retryable: false,
      errno: typeof err?.errno === 'number' ? Math.abs(err.errno) : null,
      errno_name: errnoName,
      exception_type: errnoName ? 'OSError' : 'Error',
    },
    hint: null,
  });
}

function osError(code, message) {
  const err = new Error(message);
  err.code = code;
  return err;
}

async function readBody(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw osError('EFBIG', 'request body too large');
    chunks.push(chunk);
  }
  if (size === 0) return {};
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

function requireAbsolute(p, name = 'path') {
  if (typeof p !== 'string' || !path.isAbsolute(p)) {
    throw osError('EINVAL', `${name} must be an absolute path, got ${JSON.stringify(p)}`);
  }
  return path.normalize(p);
}

/** fnmatch-style basename matching (`*`, `?`, `[...]`), the way `find -name` matches. */
function fnmatch(pattern) {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end === -1) re += '\\[';
      else {
        let body = pattern.slice(i + 1, end);
        if (body.startsWith('!')) body = `^${body.slice(1)}`;
        re += `[${body.replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else re += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  const compiled = new RegExp(`^${re}$`, 's');
  return (name) => compiled.test(name);
}

function parseSize(text) {
  if (text === null || text === undefined) return 1024 * 1024;
  const m = /^(\d+)([KMG]?)B?$/i.exec(String(text).trim());
  if (!m) return 1024 * 1024;
  const unit = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3 }[m[2].toUpperCase()];
  return Number(m[1]) * unit;
}

/** Depth-first walk in name order; `visit` returns false to skip descending into a directory. */
async function walk(root, visit, depth = 1) {
  const entries = await fs.readdir(root, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const full = path.join(root, entry.name);
    const descend = await visit(full, entry, depth);
    if (entry.isDirectory() && descend !== false) {
      try {
        await walk(full, visit, depth + 1);
      } catch (err) {
        if (err?.code !== 'EACCES' && err?.code !== 'ENOENT') throw err;
      }
    }
  }
}

async function requireDirectory(p) {
  const info = await fs.stat(p);
  if (!info.isDirectory()) throw osError('ENOTDIR', `Not a directory: '${p}'`);
}

async function isBinary(file) {
  const handle = await fs.open(file, 'r');
  try {
    const buf = Buffer.alloc(BINARY_SNIFF_BYTES);
    const { bytesRead } = await handle.read(buf, 0, BINARY_SNIFF_BYTES, 0);
    return buf.subarray(0, bytesRead).includes(0);
  } finally {
    await handle.close();
  }
}

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

function killGroup(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
}

// ---------------------------------------------------------------------------------------------
// shell sessions

/**
 * One long-lived shell process. Commands are written to its stdin, each followed by a sentinel
 * line with a fresh random token on stdout and on stderr; the command is complete when both
 * sentinels have arrived. Output is stdout and stderr merged in arrival order (the image runs a
 * terminal, where they are merged too). Commands on one session run one at a time.
 */
class ShellSession {
  constructor(id, { shell, cwd, env }) {
    this.id = id;
    this.cwd = cwd;
    this.dead = false;
    this.corrupted = false;
    this.queue = Promise.resolve();
    this.current = undefined;
    this.child = spawn(shell.file, shell.args, {
      cwd,
      env: { ...env, PS1: '', PS2: '', HOME: env.HOME ?? cwd },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    this.child.stdin.on('error', () => {});
    this.child.stdout.setEncoding('utf8');
    this.child.stderr.setEncoding('utf8');
    this.child.stdout.on('data', (chunk) => this.current?.onData('out', chunk));
    this.child.stderr.on('data', (chunk) => this.current?.onData('err', chunk));
    this.exited = new Promise((resolve) => {
      this.child.once('close', (code, signal) => {
        this.dead = true;
        resolve();
        this.current?.onExit(code ?? (signal ? 128 : 0));
      });
      this.child.once('error', () => {
        this.dead = true;
        resolve();
        this.current?.onExit(127);
      });
    });
    // Swallows the shell's banner and start-up warnings.
    this.ready = this.run(null, {});
  }

  exec(command, timeouts) {
    const result = this.queue.then(() => this.run(command, timeouts));
    this.queue = result.catch(() => {});
    return result;
  }

  async run(command, { noChangeTimeout, hardTimeout }) {
    await this.ready;
    if (this.dead) return { status: 'terminated', output: '', exitCode: null };
    const token = `__SBX_STANDIN_${randomUUID().replace(/-/g, '')}__`;
    const delimiter = `__SBX_STANDIN_EOF_${randomUUID().replace(/-/g, '')}`;
    const script =
      command === null
        ? ''
        : `eval "$(cat <<'${delimiter}'\n${command}\n${delimiter}\n)" </dev/null\n`;
    return new Promise((resolve) => {
      const buffers = { out: '', err: '' };
      const arrivals = [];
      const cuts = { out: -1, err: -1 };
      let exitCode = null;
      let settled = false;
      let idleTimer;
      let hardTimer;
      const assemble = () => {
        const taken = { out: 0, err: 0 };
        let output = '';
        for (const { stream, length } of arrivals) {
          const limit = cuts[stream] === -1 ? buffers[stream].length : cuts[stream];
          const from = taken[stream];
          const to = Math.min(from + length, limit);
          if (to > from) output += buffers[stream].slice(from, to);
          taken[stream] += length;
        }
        return output;
      };
      const finish = (status) => {
        if (settled) return;
        settled = true;
        clearTimeout(idleTimer);
        clearTimeout(hardTimer);
        this.current = undefined;
        if (status !== 'completed') {
          // The real image leaves a timed-out command running in its terminal; this stand-in ends
          // the session instead (README: differences).
          this.dead = true;
          killGroup(this.child);
        }
        resolve({ status, output: assemble(), exitCode: status === 'completed' ? exitCode : null });
      };
      const armIdle = () => {
        if (!noChangeTimeout) return;
        clearTimeout(idleTimer);
        idleTimer = setTimeout(() => finish('no_change_timeout'), noChangeTimeout * 1000);
      };
      this.current = {
        onData: (stream, chunk) => {
          buffers[stream] += chunk;
          arrivals.push({ stream, length: chunk.length });
          armIdle();
          if (cuts.out === -1) {
            const m = new RegExp(`${token}(\\d+)\\n`).exec(buffers.out);
            if (m) {
              cuts.out = m.index;
              exitCode = Number(m[1]);
            }
          }
          if (cuts.err === -1) {
            const at = buffers.err.indexOf(`${token}\n`);
            if (at !== -1) cuts.err = at;
          }
          if (cuts.out !== -1 && cuts.err !== -1) finish('completed');
        },
        onExit: (code) => {
          // `exit` ends the shell: whatever it printed is the output, its status the exit code.
          exitCode = code;
          finish('completed');
        },
      };
      armIdle();
      if (hardTimeout) hardTimer = setTimeout(() => finish('hard_timeout'), hardTimeout * 1000);
      this.child.stdin.write(
        `${script}__sbx_standin_rc=$?; printf '%s%s\\n' '${token}' "$__sbx_standin_rc"; printf '%s\\n' '${token}' >&2\n`,
      );
    });
  }

  async close() {
    this.dead = true;
    killGroup(this.child);
    await this.exited;
  }
}

// ---------------------------------------------------------------------------------------------
// the server

/**
 * Creates the stand-in. `handler` serves one request; `close()` ends every session.
 *
 * Options: `homeDir`, `bashApi` (false: 404 on /v1/bash/*), `errorObservationTrigger`, `shell`
 * (`{ file, args, commandShell, shArg? }`), `env` (base environment of commands).
 */
export function createAioStandin(options = {}) {
  const homeDir = options.homeDir ?? process.env.SBX_AIO_HOME ?? process.env.HOME ?? '/root';
  const bashApi = options.bashApi ?? process.env.SBX_AIO_STANDIN_NO_BASH_API !== '1';
  const trigger =
    options.errorObservationTrigger ?? process.env.SBX_AIO_STANDIN_ERROR_OBSERVATION ?? '';
  const baseEnv = options.env ?? { ...process.env };
  const shellPromise = options.shell ? Promise.resolve(options.shell) : defaultShell();
  const sessions = new Map();
  let defaultSessionId;
  const requests = [];
  let closed = false;

  async function newSession(id) {
    const shell = await shellPromise;
    const session = new ShellSession(id, { shell, cwd: homeDir, env: baseEnv });
    sessions.set(id, session);
    session.exited.then(() => {
      if (sessions.get(id) === session) sessions.delete(id);
    });
    await session.ready;
    return session;
  }

  async function defaultSession() {
    const existing = defaultSessionId && sessions.get(defaultSessionId);
    if (existing && !existing.dead) return existing;
    defaultSessionId = randomUUID();
    return newSession(defaultSessionId);
  }

  async function shellExec(res, body) {
    if (typeof body.command !== 'string') return unprocessable(res, 'command is required');
    let session;
    if (body.id) {
      session = sessions.get(body.id);
      if (!session || session.dead) return notFound(res, `Session not found: ${body.id}`);
    } else {
      session = await defaultSession();
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
    ok(res, {
      session_id: session.id,
      command: body.command,
      status: result.status,
      output: result.output,
      console: [],
      exit_code: result.exitCode,
    });
  }

  async function bashExec(res, body) {
    if (typeof body.command !== 'string') return unprocessable(res, 'command is required');
    const env = { ...baseEnv };
    for (const [k, v] of Object.entries(body.env ?? {})) env[k] = String(v);
    const sessionId = randomUUID();
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
      cwd: homeDir,
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

  async function fileRead(res, body) {
    let file;
    try {
      file = requireAbsolute(body.file, 'file');
      const text = await fs.readFile(file, 'utf8');
      let content = text;
      if (body.start_line !== undefined || body.end_line !== undefined) {
        // Python's readlines() slicing: lines keep their endings, bounds clamp.
        const lines = text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
        const start = body.start_line ?? 0;
        const end = body.end_line ?? lines.length;
        content = lines.slice(start, end).join('');
      }
      ok(res, { content, file });
    } catch (err) {
      fileFailure(res, 'read', body.file, err);
    }
  }

  async function fileWrite(res, body) {
    try {
      const file = requireAbsolute(body.file, 'file');
      if (typeof body.content !== 'string') return unprocessable(res, 'content is required');
      const data =
        body.encoding === 'base64'
          ? Buffer.from(body.content, 'base64')
          : Buffer.from(body.content, 'utf8');
      await fs.mkdir(path.dirname(file), { recursive: true });
      if (body.append) await fs.appendFile(file, data);
      else await fs.writeFile(file, data);
      ok(res, { file, bytes_written: data.length });
    } catch (err) {
      fileFailure(res, 'write', body.file, err);
    }
  }

  async function fileFind(res, body) {
    try {
      const root = requireAbsolute(body.path);
      await requireDirectory(root);
      const matches = fnmatch(typeof body.glob === 'string' ? body.glob : '*');
      const files = [];
      await walk(root, async (full, entry) => {
        if (entry.isFile() && matches(entry.name)) files.push(full);
      });
      ok(res, { path: root, files });
    } catch (err) {
      fileFailure(res, 'find', body.path, err);
    }
  }

  async function fileList(res, body) {
    try {
      const root = requireAbsolute(body.path);
      await requireDirectory(root);
      const showHidden = body.show_hidden ?? true;
      const maxDepth = body.recursive ? (body.max_depth ?? Infinity) : 1;
      const files = [];
      await walk(root, async (full, entry, depth) => {
        if (!showHidden && entry.name.startsWith('.')) return false;
        let size = null;
        let modified = null;
        try {
          const info = await fs.lstat(full);
          size = info.size;
          modified = info.mtime.toISOString();
        } catch {
          // vanished while listing
        }
        files.push({
          name: entry.name,
          path: full,
          is_directory: entry.isDirectory(),
          size: entry.isDirectory() ? null : size,
          modified_time: modified,
          permissions: null,
          extension: entry.isDirectory() ? null : path.extname(entry.name) || null,
        });
        return depth < maxDepth;
      });
      const directories = files.filter((f) => f.is_directory).length;
      ok(res, {
        path: root,
        files,
        total_count: files.length,
        directory_count: directories,
        file_count: files.length - directories,
      });
    } catch (err) {
      fileFailure(res, 'list', body.path, err);
    }
  }

  /** grep -n over a batch of files, parsed against the known names (a name may contain ':'). */
  async function grepBatch(shell, flags, pattern, files) {
    const args = [...flags, '-n', '-H', '-e', pattern, '--', ...files];
    const argv = shell.shArg ? ['grep', ...args] : args;
    const file = shell.shArg ? shell.commandShell : 'grep';
    const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (c) => (out += c));
    child.stderr.setEncoding('utf8').on('data', (c) => (err += c));
    const code = await new Promise((resolve) => {
      child.once('close', resolve);
      child.once('error', () => resolve(2));
    });
    if (code === 2 && err.trim()) throw osError('EINVAL', `regex parse error: ${err.trim()}`);
    const byLength = [...files].sort((a, b) => b.length - a.length);
    const matches = [];
    for (const line of out.split('\n')) {
      if (line === '') continue;
      for (const f of byLength) {
        if (!line.startsWith(`${f}:`)) continue;
        const m = /^(\d+):/.exec(line.slice(f.length + 1));
        if (!m) continue;
        matches.push({
          file: f,
          line_number: Number(m[1]),
          line_content: line.slice(f.length + 1 + m[0].length),
        });
        break;
      }
    }
    return matches;
  }

  async function fileGrep(res, body) {
    try {
      const root = requireAbsolute(body.path);
      if (typeof body.pattern !== 'string') return unprocessable(res, 'pattern is required');
      const maxResults = Number(body.max_results) || 500;
      const maxSize = parseSize(body.max_file_size);
      const include = (body.include ?? []).map(fnmatch);
      const candidates = [];
      const consider = async (full) => {
        const info = await fs.stat(full);
        if (!info.isFile() || info.size > maxSize) return;
        if (include.length > 0 && !include.some((m) => m(path.basename(full)))) return;
        if (await isBinary(full)) return;
        candidates.push(full);
      };
      const rootInfo = await fs.stat(root);
      if (rootInfo.isDirectory()) {
        await walk(root, async (full, entry) => {
          if (entry.isFile()) await consider(full);
          return body.recursive ?? true;
        });
      } else {
        await consider(root);
      }
      const shell = await shellPromise;
      const flags = [body.fixed_strings ? '-F' : '-E'];
      if (body.case_insensitive) flags.push('-i');
      const matches = [];
      let truncated = false;
      for (let i = 0; i < candidates.length && !truncated; i += GREP_BATCH) {
        const found = await grepBatch(
          shell,
          flags,
          body.pattern,
          candidates.slice(i, i + GREP_BATCH),
        );
        for (const m of found) {
          if (matches.length >= maxResults) {
            truncated = true;
            break;
          }
          matches.push({ ...m, context_before: null, context_after: null });
        }
      }
      ok(res, {
        path: root,
        pattern: body.pattern,
        matches,
        match_count: matches.length,
        files_searched: candidates.length,
        files_matched: new Set(matches.map((m) => m.file)).size,
        truncated,
      });
    } catch (err) {
      fileFailure(res, 'grep', body.path, err);
    }
  }

  async function download(res, url) {
    const target = url.searchParams.get('path');
    if (!target) return unprocessable(res, 'path is required');
    let info;
    try {
      info = await fs.stat(target);
    } catch (err) {
      if (err?.code === 'ENOENT' || err?.code === 'ENOTDIR') {
        return notFound(res, `File not found: ${target}`);
      }
      return send(res, 500, { detail: `Cannot read ${target}: ${err.message}` });
    }
    if (!info.isFile()) return send(res, 400, { detail: `Not a file: ${target}` });
    res.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': info.size,
      'content-disposition': `attachment; filename="${path.basename(target)}"`,
    });
    createReadStream(target)
      .on('error', () => res.destroy())
      .pipe(res);
  }

  async function route(req, res) {
    const url = new URL(req.url ?? '/', 'http://standin');
    const p = url.pathname;
    const method = req.method ?? 'GET';
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
      const existing = sessions.get(id);
      if (!existing || existing.dead) await newSession(id);
      return ok(res, { session_id: id, working_dir: homeDir });
    }
    const sessionRoute = /^\/v1\/shell\/sessions\/([^/]+)$/.exec(p);
    if (method === 'DELETE' && sessionRoute) {
      const id = decodeURIComponent(sessionRoute[1]);
      const session = sessions.get(id);
      if (!session) return notFound(res, `Session not found: ${id}`);
      sessions.delete(id);
      await session.close();
      return ok(res, null, { message: `Session ${id} cleaned up` });
    }
    if (method === 'POST' && p === '/v1/bash/exec') return bashExec(res, body);
    if (method === 'POST' && p === '/v1/file/read') return fileRead(res, body);
    if (method === 'POST' && p === '/v1/file/write') return fileWrite(res, body);
    if (method === 'POST' && p === '/v1/file/find') return fileFind(res, body);
    if (method === 'POST' && p === '/v1/file/list') return fileList(res, body);
    if (method === 'POST' && p === '/v1/file/grep') return fileGrep(res, body);
    if (method === 'GET' && p === '/v1/file/download') return download(res, url);
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
    /** Live session ids (the default session included once it exists). */
    sessionIds: () => [...sessions.keys()].filter((id) => !sessions.get(id).dead),
    defaultSessionId: () => defaultSessionId,
    async close() {
      closed = true;
      await Promise.all([...sessions.values()].map((s) => s.close()));
      sessions.clear();
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
      await standin.close();
      server.closeAllConnections();
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
