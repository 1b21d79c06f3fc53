import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isSbxError } from '@sbx/core';
import type { Logger, SbxError } from '@sbx/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AioSandbox } from './aio-sandbox.js';
import { startStandin } from './aio-standin.fixture.js';
import type { StandinFixture } from './aio-standin.fixture.js';
import { BASH_EXEC_UNSUPPORTED_MESSAGE } from './bash-exec-unsupported.js';
import { SCOPE_NO_LONGER_ACTIVE_MESSAGE } from './command-scopes.js';
import { AioApi } from './aio-api.js';
import { AioHttpClient, DEFAULT_REQUEST_TIMEOUT_MS } from './aio-http.js';
import { MAX_DOWNLOAD_BYTES } from './download-path.js';
import { ERROR_OBSERVATION_SIGNATURE } from './error-observation.js';

const TRIGGER = 'SBX-CORRUPT-SESSION';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface LogLine {
  level: string;
  msg: string;
}

function recordingLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at = (level: string) => (msg: string) => {
    lines.push({ level, msg });
  };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

/** A shell loop that waits (bounded) until `file` exists. */
function waitForFile(file: string): string {
  return `i=0; while [ ! -e ${file} ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; [ -e ${file} ] && echo saw-${path.basename(file)}`;
}

let standin: StandinFixture;
let sandbox: AioSandbox;
let logger: ReturnType<typeof recordingLogger>;

beforeEach(async () => {
  standin = await startStandin({ errorObservationTrigger: TRIGGER });
  logger = recordingLogger();
  sandbox = new AioSandbox('sb-test', { baseUrl: standin.url, logger });
});

afterEach(async () => {
  await sandbox.close();
  await standin.close();
});

describe('AioSandbox transport', () => {
  it('§9.1.1 reaches a container-internal host directly, with a 600 s request limit', () => {
    const direct = new AioSandbox('a', { baseUrl: 'http://host.docker.internal:8080' });
    expect(direct.usesEnvProxy).toBe(false);
    expect(DEFAULT_REQUEST_TIMEOUT_MS).toBe(600_000);
    void direct.close();
  });

  it.each([
    'https://sandbox.example.com',
    'http://8.8.8.8:8080',
    'http://[2606:4700:4700::1111]:8080',
  ])('§9.1.2 keeps environment proxies for the external URL %s', (url) => {
    const external = new AioSandbox('a', { baseUrl: url });
    expect(external.usesEnvProxy).toBe(true);
    void external.close();
  });

  it('reads home_dir from GET /v1/sandbox once', async () => {
    expect(await sandbox.getHomeDir()).toBe(standin.home);
    expect(await sandbox.getHomeDir()).toBe(standin.home);
    expect(standin.calls('/v1/sandbox')).toHaveLength(1);
  });
});

describe('AioSandbox.executeCommand (persistent session)', () => {
  it('assembles stdout, stderr and the exit code from the framed shell output', async () => {
    expect(await sandbox.executeCommand('echo out; echo err >&2; exit 2')).toBe(
      'out\n\nStd Error:\nerr\n\nExit Code: 2',
    );
    expect(await sandbox.executeCommand('echo err >&2')).toBe('err\n');
    expect(await sandbox.executeCommand('true')).toBe('(no output)');
    expect(await sandbox.executeCommand('printf no-newline')).toBe('no-newline');
  });

  it('keeps shell state (cwd, exported variables) between commands', async () => {
    await sandbox.executeCommand('cd /tmp && export SBX_KEPT=yes');
    expect(await sandbox.executeCommand('echo "$(pwd) $SBX_KEPT"')).toBe('/tmp yes\n');
  });

  it('contains a syntax error to the command', async () => {
    const out = await sandbox.executeCommand('echo "unterminated');
    expect(out).toMatch(/Exit Code: 2$/);
    expect(await sandbox.executeCommand('echo still-alive')).toBe('still-alive\n');
  });

  // §9.1.14 pins "no session id" (the reference relies on a default session the real image does
  // not have: an id-less call gets a one-off session there). sbx creates one session with an id.
  it('§9.1.14 (changed) sends no_change_timeout 600 and its own session id, the same every time', async () => {
    await sandbox.executeCommand('echo x');
    await sandbox.executeCommand('echo y');
    const [first, second] = standin.calls('/v1/shell/exec');
    expect(first?.body.no_change_timeout).toBe(600);
    expect(String(first?.body.id)).toMatch(/^sbx-default-/);
    expect(second?.body.id).toBe(first?.body.id);
    expect(first?.body.truncate).toBe(false);
  });

  it('§9.1.3 never runs two default-session commands at once', async () => {
    const outs = await Promise.all(
      [1, 2, 3].map((n) => sandbox.executeCommand(`sleep 0.2; echo run-${n}`)),
    );
    expect(outs).toEqual(['run-1\n', 'run-2\n', 'run-3\n']);
    expect(standin.maxConcurrent()).toBe(1);
  });

  it('§9.1.7 clean output takes exactly one exec call, unchanged', async () => {
    expect(await sandbox.executeCommand('echo clean')).toBe('clean\n');
    expect(standin.calls('/v1/shell/exec')).toHaveLength(1);
    // The default session is created once, before the first command.
    expect(standin.calls('/v1/shell/sessions/create')).toHaveLength(1);
    expect(await sandbox.executeCommand('echo again')).toBe('again\n');
    expect(standin.calls('/v1/shell/sessions/create')).toHaveLength(1);
  });

  it('reports a command timeout as the notice, without an exit code', async () => {
    const out = await sandbox.executeCommand('sleep 5', { timeoutMs: 300 });
    expect(out).toMatch(/^Command timed out after 0\.3 seconds and was terminated\./);
    expect(out).not.toContain('Exit Code');
    expect(standin.calls('/v1/shell/exec')[0]?.body.hard_timeout).toBe(0.3);
  });
});

describe('AioSandbox ErrorObservation recovery', () => {
  it('§9.1.4 §9.1.5 retries once on a fresh 36-character session and deletes it afterwards', async () => {
    await sandbox.executeCommand(`echo ${TRIGGER}`);
    const before = standin.requests.length;
    expect(await sandbox.executeCommand('echo recovered')).toBe('recovered\n');
    const after = standin.requests.slice(before);
    const execs = after.filter((r) => r.path === '/v1/shell/exec');
    const creates = after.filter((r) => r.path === '/v1/shell/sessions/create');
    expect(execs).toHaveLength(2);
    const corrupted = execs[0]?.body.id as string;
    expect(corrupted).toMatch(/^sbx-default-/);
    expect(creates).toHaveLength(1);
    const fresh = creates[0]?.body.id as string;
    expect(fresh).toMatch(UUID);
    expect(fresh).toHaveLength(36);
    expect(execs[1]?.body.id).toBe(fresh);
    // The corrupted default session is replaced too (deleted; the next command gets a new one).
    expect(after.filter((r) => r.method === 'DELETE').map((r) => r.path)).toEqual([
      `/v1/shell/sessions/${corrupted}`,
      `/v1/shell/sessions/${fresh}`,
    ]);
    expect(standin.sessionIds()).not.toContain(fresh);
    expect(logger.lines.some((l) => l.level === 'warn' && l.msg.includes('ErrorObservation'))).toBe(
      true,
    );
  });

  it('§9.1.14 sends no_change_timeout 600 on the recovery retry too', async () => {
    await sandbox.executeCommand(`echo ${TRIGGER}`);
    const before = standin.requests.length;
    await sandbox.executeCommand('echo again');
    const execs = standin.requests.slice(before).filter((r) => r.path === '/v1/shell/exec');
    expect(execs.map((r) => r.body.no_change_timeout)).toEqual([600, 600]);
  });

  it('§9.1.6 a failed cleanup of the recovery session does not fail the command', async () => {
    await sandbox.executeCommand(`echo ${TRIGGER}`);
    standin.intercept((req) =>
      req.method === 'DELETE' ? { status: 500, body: { detail: 'boom' } } : undefined,
    );
    expect(await sandbox.executeCommand('echo fine')).toBe('fine\n');
    expect(logger.lines.some((l) => l.msg.includes('Could not delete AIO shell session'))).toBe(
      true,
    );
  });

  it('does not mistake printed signature text for a corrupted session', async () => {
    const out = await sandbox.executeCommand(`echo "${ERROR_OBSERVATION_SIGNATURE}"`);
    expect(out).toContain('ErrorObservation');
    expect(standin.calls('/v1/shell/exec')).toHaveLength(1);
  });
});

describe('AioSandbox env-bearing commands (bash/exec)', () => {
  it('passes env in the structured field, on a fresh session, and redacts it from output', async () => {
    const out = await sandbox.executeCommand('echo "got:$SBX_TOKEN_X"; exit 4', {
      env: { SBX_TOKEN_X: 'super-secret-value' },
    });
    expect(out).toBe('got:[redacted]\n\nExit Code: 4');
    const [call] = standin.calls('/v1/bash/exec');
    expect(call?.body.env).toEqual({ SBX_TOKEN_X: 'super-secret-value' });
    expect(call?.body.command).not.toContain('super-secret-value');
    expect(call?.body.session_id).toBeUndefined();
    expect(call?.body.hard_timeout).toBe(600);
  });

  it('no secret persistence: the next plain command does not see the variable', async () => {
    await sandbox.executeCommand('export SBX_LEAK_CHECK="$SBX_LEAK_CHECK"; echo set', {
      env: { SBX_LEAK_CHECK: 'abc' },
    });
    expect(await sandbox.executeCommand('echo "v=$SBX_LEAK_CHECK"')).toBe('v=\n');
    expect(
      await sandbox.executeCommandInScope('echo "v=$SBX_LEAK_CHECK"', { scopeId: 'sub-1' }),
    ).toBe('v=\n');
    expect(await sandbox.executeCommand('echo "v=$SBX_LEAK_CHECK"', { env: { OTHER: '1' } })).toBe(
      'v=\n',
    );
  });

  it('§9.1.12 a successful bash/exec returns its output every time and stays enabled', async () => {
    for (let i = 0; i < 2; i++) {
      expect(await sandbox.executeCommand('echo ok', { env: { A: '1' } })).toBe('ok\n');
    }
    expect(sandbox.bashExecUnsupportedDetected).toBe(false);
    expect(standin.calls('/v1/bash/exec')).toHaveLength(2);
  });

  it('§9.1.10 a 500 from bash/exec is not cached: each call reaches the API', async () => {
    standin.intercept((req) =>
      req.path === '/v1/bash/exec' ? { status: 500, body: { detail: 'busy' } } : undefined,
    );
    for (let i = 0; i < 2; i++) {
      const err = await rejection(sandbox.executeCommand('echo x', { env: { A: '1' } }));
      expect(isSbxError(err)).toBe(true);
      expect((err as SbxError).message).not.toContain('1.9.3');
    }
    expect(standin.calls('/v1/bash/exec')).toHaveLength(2);
    expect(sandbox.bashExecUnsupportedDetected).toBe(false);
  });

  it('retries once after ErrorObservation and keeps the first answer when the retry is no better', async () => {
    const out = await sandbox.executeCommand(`echo ${TRIGGER}`, { env: { A: '1' } });
    expect(out).toContain(ERROR_OBSERVATION_SIGNATURE);
    expect(standin.calls('/v1/bash/exec')).toHaveLength(2);
  });

  it('returns the retry when it is clean', async () => {
    let first = true;
    standin.intercept((req) => {
      if (req.path !== '/v1/bash/exec' || !first) return undefined;
      first = false;
      return {
        status: 200,
        body: {
          success: true,
          data: {
            status: 'completed',
            stdout: '',
            stderr: `x ${ERROR_OBSERVATION_SIGNATURE}`,
            exit_code: null,
          },
        },
      };
    });
    expect(await sandbox.executeCommand('echo second', { env: { A: '1' } })).toBe('second\n');
  });
});

describe('AioSandbox on an image without /v1/bash (404)', () => {
  let old: StandinFixture;
  let oldSandbox: AioSandbox;
  let oldLogger: ReturnType<typeof recordingLogger>;

  beforeEach(async () => {
    old = await startStandin({ bashApi: false });
    oldLogger = recordingLogger();
    oldSandbox = new AioSandbox('old', { baseUrl: old.url, logger: oldLogger });
  });
  afterEach(async () => {
    await oldSandbox.close();
    await old.close();
  });

  it('§9.1.8 returns the operator-facing upgrade message', async () => {
    const out = await oldSandbox.executeCommand('echo x', { env: { A: '1' } });
    expect(out).toBe(BASH_EXEC_UNSUPPORTED_MESSAGE);
    expect(out.startsWith('Error:')).toBe(true);
    expect(out).toContain('/v1/bash/exec');
    expect(out).toContain('1.9.3');
    expect(out).toContain('required-secrets');
    expect(out).not.toContain('nginx');
    expect(oldSandbox.bashExecUnsupportedDetected).toBe(true);
    expect(oldLogger.lines.some((l) => l.level === 'error')).toBe(true);
  });

  it('§9.1.9 later env-bearing calls return the same message without any request', async () => {
    const first = await oldSandbox.executeCommand('echo x', { env: { A: '1' } });
    const count = old.requests.length;
    const second = await oldSandbox.executeCommand('echo y', { env: { B: '2' } });
    expect(second).toBe(first);
    expect(old.requests.length).toBe(count);
  });

  it('§9.1.11 env-less commands still run on the shell session', async () => {
    await oldSandbox.executeCommand('echo x', { env: { A: '1' } });
    expect(await oldSandbox.executeCommand('echo plain')).toBe('plain\n');
  });
});

describe('AioSandbox command scopes', () => {
  it('keeps one ordered session per scope, separate from the default session', async () => {
    await sandbox.executeCommandInScope('cd /tmp; export SCOPE_VAR=one', { scopeId: 's1' });
    expect(await sandbox.executeCommandInScope('echo "$(pwd) $SCOPE_VAR"', { scopeId: 's1' })).toBe(
      '/tmp one\n',
    );
    expect(await sandbox.executeCommandInScope('echo "[$SCOPE_VAR]"', { scopeId: 's2' })).toBe(
      '[]\n',
    );
    expect(await sandbox.executeCommand('echo "[$SCOPE_VAR]"')).toBe('[]\n');
    const creates = standin.calls('/v1/shell/sessions/create');
    // Two scope sessions and the default session.
    expect(creates).toHaveLength(3);
    for (const c of creates) {
      expect(String(c.body.id).replace(/^sbx-(scope|default)-/, '')).toMatch(UUID);
    }
  });

  it('runs commands of one scope in call order', async () => {
    const log = path.join(standin.home, 'order.log');
    await Promise.all(
      [1, 2, 3, 4, 5].map((n) =>
        sandbox.executeCommandInScope(`sleep 0.0${6 - n}; echo ${n} >> ${log}`, { scopeId: 'ord' }),
      ),
    );
    expect((await readFile(log, 'utf8')).trim().split('\n')).toEqual(['1', '2', '3', '4', '5']);
  });

  it('runs different scopes concurrently', async () => {
    const flag = path.join(standin.home, 'flag');
    const waiting = sandbox.executeCommandInScope(waitForFile(flag), { scopeId: 'a' });
    const other = await sandbox.executeCommandInScope(`touch ${flag}; echo made`, { scopeId: 'b' });
    expect(other).toBe('made\n');
    expect(await waiting).toBe('saw-flag\n');
  });

  it('routes an env-bearing scoped command through bash/exec, never the scope session', async () => {
    const out = await sandbox.executeCommandInScope('echo "$K"', { scopeId: 's', env: { K: 'v' } });
    expect(out).toBe('v\n');
    expect(standin.calls('/v1/bash/exec')).toHaveLength(1);
    expect(standin.calls('/v1/shell/sessions/create')).toHaveLength(0);
  });

  it('release deletes the scope session; a released scope starts afresh', async () => {
    await sandbox.executeCommandInScope('export GONE=1', { scopeId: 'rel' });
    const session = standin.calls('/v1/shell/sessions/create')[0]?.body.id as string;
    expect(standin.sessionIds()).toContain(session);
    await sandbox.releaseCommandScope('rel');
    expect(standin.sessionIds()).not.toContain(session);
    expect(standin.calls(`/v1/shell/sessions/${session}`, 'DELETE')).toHaveLength(1);
    expect(sandbox.activeScopeCount).toBe(0);
    await sandbox.releaseCommandScope('rel');
    expect(await sandbox.executeCommandInScope('echo "[$GONE]"', { scopeId: 'rel' })).toBe('[]\n');
  });

  it('a command queued behind a running one fails once the scope is released, and creates no session', async () => {
    const flag = path.join(standin.home, 'release-flag');
    const running = sandbox.executeCommandInScope(waitForFile(flag), { scopeId: 'q' });
    // Let the first command reach the server before queueing the second.
    while (standin.calls('/v1/shell/exec').length === 0) await new Promise((r) => setImmediate(r));
    const queued = rejection(sandbox.executeCommandInScope('echo must-not-run', { scopeId: 'q' }));
    const released = sandbox.releaseCommandScope('q');
    await writeFile(flag, '');
    expect(await running).toBe('saw-release-flag\n');
    await released;
    const err = await queued;
    expect(isSbxError(err)).toBe(true);
    expect((err as SbxError).message).toContain(SCOPE_NO_LONGER_ACTIVE_MESSAGE);
    expect(standin.calls('/v1/shell/sessions/create')).toHaveLength(1);
    expect(
      standin.calls('/v1/shell/exec').some((r) => String(r.body.command).includes('must-not-run')),
    ).toBe(false);
    expect(standin.sessionIds()).toEqual(
      standin.defaultSessionId() ? [standin.defaultSessionId()] : [],
    );
  });

  it('replaces a scope session after ErrorObservation and keeps the clean replacement', async () => {
    await sandbox.executeCommandInScope(`export K=1; echo ${TRIGGER}`, { scopeId: 'eo' });
    const original = standin.calls('/v1/shell/sessions/create')[0]?.body.id as string;
    expect(await sandbox.executeCommandInScope('echo after', { scopeId: 'eo' })).toBe('after\n');
    const creates = standin.calls('/v1/shell/sessions/create');
    expect(creates).toHaveLength(2);
    const replacement = creates[1]?.body.id as string;
    expect(standin.calls(`/v1/shell/sessions/${original}`, 'DELETE')).toHaveLength(1);
    const before = standin.calls('/v1/shell/exec').length;
    expect(await sandbox.executeCommandInScope('echo next', { scopeId: 'eo' })).toBe('next\n');
    const execs = standin.calls('/v1/shell/exec').slice(before);
    expect(execs.map((r) => r.body.id)).toEqual([replacement]);
  });

  it('drops a replacement that is corrupted too, leaving the scope without a session', async () => {
    await sandbox.executeCommandInScope('echo first', { scopeId: 'bad' });
    standin.intercept((req) =>
      req.path === '/v1/shell/exec' && req.body.id !== undefined
        ? {
            status: 200,
            body: {
              success: true,
              data: { status: 'completed', output: ERROR_OBSERVATION_SIGNATURE, exit_code: null },
            },
          }
        : undefined,
    );
    const out = await sandbox.executeCommandInScope('echo x', { scopeId: 'bad' });
    expect(out).toContain(ERROR_OBSERVATION_SIGNATURE);
    const creates = standin.calls('/v1/shell/sessions/create').map((r) => r.body.id as string);
    expect(creates).toHaveLength(2);
    const deleted = standin.calls('/v1/shell/sessions/' + creates[1], 'DELETE');
    expect(deleted).toHaveLength(1);
    standin.intercept(undefined);
    expect(await sandbox.executeCommandInScope('echo healthy', { scopeId: 'bad' })).toBe(
      'healthy\n',
    );
    expect(standin.calls('/v1/shell/sessions/create')).toHaveLength(3);
  });

  it('recreates a scope session once when the shell behind it has exited', async () => {
    expect(await sandbox.executeCommandInScope('exit 7', { scopeId: 'ex' })).toBe('\nExit Code: 7');
    expect(await sandbox.executeCommandInScope('echo back', { scopeId: 'ex' })).toBe('back\n');
    expect(standin.calls('/v1/shell/sessions/create')).toHaveLength(2);
  });

  it('close() drains every scope and refuses later commands', async () => {
    await sandbox.executeCommandInScope('true', { scopeId: 'c1' });
    await sandbox.executeCommandInScope('true', { scopeId: 'c2' });
    const sessions = standin.calls('/v1/shell/sessions/create').map((r) => r.body.id as string);
    await sandbox.close();
    for (const s of sessions) expect(standin.sessionIds()).not.toContain(s);
    const err = await rejection(sandbox.executeCommandInScope('true', { scopeId: 'c1' }));
    expect(isSbxError(err)).toBe(true);
  });
});

describe('AioSandbox files', () => {
  it('§9.1.15 sends a 0-based start and exclusive end for a 1-based inclusive range', async () => {
    const p = path.join(standin.home, 'r.txt');
    await writeFile(p, 'a\nb\nc\n');
    expect(await sandbox.readFile(p, { startLine: 1, endLine: 10 })).toBe('a\nb\nc');
    const [call] = standin.calls('/v1/file/read');
    expect(call?.body).toEqual({ file: p, start_line: 0, end_line: 10 });
  });

  it('§9.1.16 concurrent appends keep both payloads', async () => {
    const p = path.join(standin.home, 'app.txt');
    await sandbox.writeFile(p, 'start\n');
    await Promise.all([
      sandbox.writeFile(p, 'one\n', { append: true }),
      sandbox.writeFile(p, 'two\n', { append: true }),
    ]);
    const text = await readFile(p, 'utf8');
    expect(text.startsWith('start\n')).toBe(true);
    expect(text.split('\n').filter(Boolean).sort()).toEqual(['one', 'start', 'two']);
  });

  it('maps a refused read to a typed error naming the path', async () => {
    const p = path.join(standin.home, 'missing.txt');
    const err = await rejection(sandbox.readFile(p));
    expect(isSbxError(err) && (err as SbxError).code).toBe('SANDBOX_FILE_NOT_FOUND');
    expect((err as { kind: string }).kind).toBe('ENOENT');
    expect((err as SbxError).message).toContain(p);
  });

  it('writes binary bytes as base64', async () => {
    const p = path.join(standin.home, 'bin', 'x.bin');
    await sandbox.updateFile(p, new Uint8Array([0, 255, 10]));
    expect([...(await readFile(p))]).toEqual([0, 255, 10]);
    expect(standin.calls('/v1/file/write')[0]?.body.encoding).toBe('base64');
  });

  it('§9.1.13 listDir runs on the default session under the sandbox lock and lists entries', async () => {
    const root = path.join(standin.home, 'ls');
    await mkdir(path.join(root, 'sub'), { recursive: true });
    await writeFile(path.join(root, 'sub', 'f.txt'), 'x');
    const [listing] = await Promise.all([
      sandbox.listDir(root),
      sandbox.executeCommand('sleep 0.2'),
      sandbox.executeCommand('sleep 0.2'),
    ]);
    expect(listing).toEqual([`${root}/sub/`, `${root}/sub/f.txt`]);
    expect(standin.maxConcurrent()).toBe(1);
    const listCall = standin
      .calls('/v1/shell/exec')
      .find((r) => String(r.body.command).includes('sbx:dir'));
    expect(listCall?.body.no_change_timeout).toBe(600);
    expect(listCall?.body.id).toBe(sandbox.defaultSessionId);
  });

  it('glob and grep post-filter the API answer with the core conventions', async () => {
    const root = path.join(standin.home, 'search');
    await mkdir(path.join(root, 'node_modules'), { recursive: true });
    await mkdir(path.join(root, 'src'), { recursive: true });
    await writeFile(path.join(root, 'src', 'a.ts'), 'const needle = 1;\n');
    await writeFile(path.join(root, 'node_modules', 'b.ts'), 'needle\n');
    expect((await sandbox.glob(root, '**/*.ts')).paths).toEqual([`${root}/src/a.ts`]);
    const { matches } = await sandbox.grep(root, 'NEEDLE\\s=');
    expect(matches).toEqual([
      { path: `${root}/src/a.ts`, lineNumber: 1, line: 'const needle = 1;' },
    ]);
    expect(standin.calls('/v1/file/grep')[0]?.body).toMatchObject({
      case_insensitive: true,
      fixed_strings: false,
      max_file_size: '1M',
      recursive: true,
      max_results: 400,
    });
  });
});

describe('AioSandbox.downloadFile', () => {
  it('§9.1.17 returns the bytes (many chunks, one chunk, empty) with the path passed unchanged', async () => {
    // The sandbox only downloads below /mnt/user-data, which the in-process stand-in (serving
    // this host's files) does not have; the container tier covers that path end to end. Here the
    // API call under downloadFile is exercised directly.
    const big = path.join(standin.home, 'big.bin');
    const bytes = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
    await writeFile(big, bytes);
    await writeFile(path.join(standin.home, 'small.txt'), 'hi');
    await writeFile(path.join(standin.home, 'empty'), '');
    const http = new AioHttpClient({ baseUrl: standin.url });
    const api = new AioApi(http);
    const limits = { maxBytes: MAX_DOWNLOAD_BYTES, tooLarge: () => new Error('too large') };
    try {
      expect(Buffer.from(await api.download(big, limits)).equals(bytes)).toBe(true);
      const small = await api.download(path.join(standin.home, 'small.txt'), limits);
      expect(Buffer.from(small).toString()).toBe('hi');
      expect((await api.download(path.join(standin.home, 'empty'), limits)).length).toBe(0);
      const query = standin.calls('/v1/file/download')[0]?.query ?? '';
      expect(new URLSearchParams(query).get('path')).toBe(big);
      const capped = await rejection(
        api.download(big, { maxBytes: 1024 * 1024, tooLarge: () => new Error('over the cap') }),
      );
      expect((capped as Error).message).toBe('over the cap');
    } finally {
      await http.close();
    }
  });

  it('§9.1.20 refuses a path outside /mnt/user-data without a request and logs it', async () => {
    const err = await rejection(sandbox.downloadFile('/etc/passwd'));
    expect((err as { kind: string }).kind).toBe('EACCES');
    expect((err as SbxError).message).toContain('must be under');
    expect(
      logger.lines.some((l) => l.level === 'error' && l.msg.includes('outside allowed directory')),
    ).toBe(true);
    expect(standin.requests).toHaveLength(0);
  });

  it.each([
    '/mnt/workspace/../../etc/passwd',
    '../secret',
    '/a/b/../../../etc/shadow',
    '/mnt/user-data\\..\\x',
  ])('§9.1.21 refuses %s as path traversal without a request', async (p) => {
    const err = await rejection(sandbox.downloadFile(p));
    expect((err as { kind: string }).kind).toBe('EACCES');
    expect((err as SbxError).message).toContain('path traversal');
    expect(standin.requests).toHaveLength(0);
  });

  it('§9.1.19 a missing file is a typed not-found error; a server failure keeps its message', async () => {
    const missing = await rejection(sandbox.downloadFile('/mnt/user-data/outputs/none.bin'));
    expect((missing as { kind: string }).kind).toBe('ENOENT');
    standin.intercept((req) =>
      req.path === '/v1/file/download'
        ? { status: 500, body: { detail: 'disk on fire' } }
        : undefined,
    );
    const failed = await rejection(sandbox.downloadFile('/mnt/user-data/outputs/x.bin'));
    expect((failed as { kind: string }).kind).toBe('EIO');
    expect((failed as SbxError).message).toContain('disk on fire');
    expect((failed as SbxError).message).toContain(
      "Failed to download file '/mnt/user-data/outputs/x.bin'",
    );
  });

  it('§9.1.18 holds the sandbox lock during the download', async () => {
    standin.intercept(undefined);
    await Promise.all([
      rejection(sandbox.downloadFile('/mnt/user-data/outputs/none.bin')),
      sandbox.executeCommand('sleep 0.2'),
      rejection(sandbox.downloadFile('/mnt/user-data/outputs/none2.bin')),
    ]);
    expect(standin.maxConcurrent()).toBe(1);
  });
});

describe('AioSandbox.close', () => {
  it('§9.1.22 §9.1.23 releases the pooled sockets, is idempotent, and use after close fails', async () => {
    await sandbox.executeCommand('echo warm');
    expect(await standin.connections()).toBeGreaterThan(0);
    await Promise.all([sandbox.close(), sandbox.close()]);
    await sandbox.close();
    for (let i = 0; i < 50 && (await standin.connections()) > 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(await standin.connections()).toBe(0);
    expect(sandbox.isClosed).toBe(true);
    const err = await rejection(sandbox.executeCommand('echo x'));
    expect((err as SbxError).message).toContain('closed');
  });
});
