import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isSbxError, silentLogger } from '@sbx/core';
import { afterEach, describe, expect, it } from 'vitest';
import { AioSandbox } from './aio-sandbox.js';
import { startStandin, type StandinFixture } from './aio-standin.fixture.js';
import type { AioStandinOptions } from '../../../tools/images/aio-standin/server.mjs';
import { AioShellSessionLimitError, SESSION_RESET_NOTICE } from './shell-sessions.js';

/*
 * The real image's session, timeout, glob, error and auth semantics (agent-infra/sandbox
 * 1.9.3–1.11.0, see ../../../tools/images/aio-standin/README.md), pinned on the stand-in by raw
 * HTTP, and the client's handling of each pinned through AioSandbox.
 */

const open: { standin: StandinFixture; sandboxes: AioSandbox[] }[] = [];

async function setup(options: AioStandinOptions = {}, sandboxOptions: { apiKey?: string } = {}) {
  const standin = await startStandin(options);
  const sandbox = new AioSandbox('sb', {
    baseUrl: standin.url,
    logger: silentLogger,
    ...sandboxOptions,
  });
  open.push({ standin, sandboxes: [sandbox] });
  return { standin, sandbox };
}

afterEach(async () => {
  for (const { standin, sandboxes } of open.splice(0)) {
    await Promise.all(sandboxes.map((s) => s.close()));
    await standin.close();
  }
});

/** A decoded JSON answer, read loosely: these tests look at a few known fields. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = Record<string, any>;

async function post(
  standin: StandinFixture,
  route: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const res = await fetch(`${standin.url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Loose };
}

async function get(standin: StandinFixture, route: string) {
  const res = await fetch(`${standin.url}${route}`);
  return { status: res.status, body: (await res.json()) as Loose };
}

describe('stand-in: the image has no default shell session', () => {
  it('an id-less exec runs in a one-off session that stays; cd does not carry over', async () => {
    const { standin } = await setup();
    const a = await post(standin, '/v1/shell/exec', { command: 'cd /; pwd' });
    const b = await post(standin, '/v1/shell/exec', { command: 'pwd' });
    expect(a.body.data.session_id).not.toBe(b.body.data.session_id);
    expect(a.body.data.output).toBe('/\n');
    expect(b.body.data.output).toBe(`${standin.home}\n`);
    expect(standin.sessionIds()).toEqual(
      expect.arrayContaining([a.body.data.session_id, b.body.data.session_id]),
    );
  });

  it('the client keeps one session with an id, so cd and export persist', async () => {
    const { standin, sandbox } = await setup();
    await sandbox.executeCommand('cd /tmp && export KEPT=yes');
    expect(await sandbox.executeCommand('echo "$(pwd) $KEPT"')).toBe('/tmp yes\n');
    expect(
      standin.calls('/v1/shell/exec').every((c) => c.body.id === sandbox.defaultSessionId),
    ).toBe(true);
  });
});

describe('stand-in: the session cap (MAX_SHELL_SESSIONS) and LRU eviction', () => {
  it('evicts the least recently used idle session; refuses with 400 when all are busy', async () => {
    const { standin } = await setup({ maxSessions: 2 });
    await post(standin, '/v1/shell/sessions/create', { id: 'one' });
    await post(standin, '/v1/shell/sessions/create', { id: 'two' });
    await post(standin, '/v1/shell/exec', { id: 'one', command: 'true' });
    await post(standin, '/v1/shell/sessions/create', { id: 'three' });
    expect(standin.evictedSessionIds()).toEqual(['two']);
    expect((await get(standin, '/v1/shell/sessions/stats')).body.data).toMatchObject({
      total_sessions: 2,
      max_sessions: 2,
    });
    // Both live sessions busy (commands outliving no_change_timeout keep running).
    for (const id of ['one', 'three']) {
      const timedOut = await post(standin, '/v1/shell/exec', {
        id,
        command: 'sleep 30',
        no_change_timeout: 0.2,
      });
      expect(timedOut.body.data.status).toBe('no_change_timeout');
    }
    expect((await get(standin, '/v1/shell/sessions/stats')).body.data.active_sessions).toBe(2);
    const refused = await post(standin, '/v1/shell/sessions/create', { id: 'four' });
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toBe(
      'session limit reached and all 2 existing sessions have active commands',
    );
    await post(standin, '/v1/shell/kill', { id: 'one' });
    expect((await get(standin, '/v1/shell/sessions/stats')).body.data.active_sessions).toBe(1);
  });

  it('30 concurrent subagent scopes on a 10-session image: no session lost, none evicted', async () => {
    const { standin, sandbox } = await setup({ maxSessions: 10 });
    const scopes = Array.from({ length: 30 }, (_, i) => `scope-${i}`);
    const first = await Promise.all(
      scopes.map((scopeId) => sandbox.executeCommandInScope(`echo start-${scopeId}`, { scopeId })),
    );
    expect(first).toEqual(scopes.map((s) => `start-${s}\n`));
    expect(standin.evictedSessionIds()).toEqual([]);
    expect(standin.sessionIds().length).toBeLessThanOrEqual(10);
    // A scope whose session was recycled for another says so; none fails.
    const second = await Promise.all(
      scopes.map((scopeId) => sandbox.executeCommandInScope('echo again', { scopeId })),
    );
    for (const out of second) expect(out.endsWith('again\n')).toBe(true);
    expect(second.filter((out) => out.startsWith(SESSION_RESET_NOTICE)).length).toBeGreaterThan(0);
    expect(standin.evictedSessionIds()).toEqual([]);
  });

  it('a session the image evicted is recreated, and the command says its state is gone', async () => {
    const { standin, sandbox } = await setup({ maxSessions: 2 });
    await sandbox.executeCommand('cd /');
    // Another client fills the image: the least recently used session, ours, is evicted.
    await post(standin, '/v1/shell/sessions/create', { id: 'other-1' });
    await post(standin, '/v1/shell/sessions/create', { id: 'other-2' });
    expect(standin.evictedSessionIds()).toContain(sandbox.defaultSessionId);
    const out = await sandbox.executeCommand('pwd');
    expect(out).toBe(`${SESSION_RESET_NOTICE}\n${standin.home}\n`);
  });

  it('all sessions busy: a typed AioShellSessionLimitError, not a generic failure', async () => {
    const { standin, sandbox } = await setup({ maxSessions: 1 });
    await post(standin, '/v1/shell/sessions/create', { id: 'busy' });
    await post(standin, '/v1/shell/exec', {
      id: 'busy',
      command: 'sleep 30',
      no_change_timeout: 0.2,
    });
    const err = await sandbox.executeCommand('echo hi').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AioShellSessionLimitError);
    expect(isSbxError(err) && err.code).toBe('AIO_SHELL_SESSION_LIMIT');
    expect((err as Error).message).toContain('no free shell session');
    await post(standin, '/v1/shell/kill', { id: 'busy' });
  });
});

describe('stand-in: a timeout does not stop the command', () => {
  it('the command keeps running; the client stops it so later calls are not wedged', async () => {
    const { standin, sandbox } = await setup();
    const out = await sandbox.executeCommand('sleep 30', { timeoutMs: 300 });
    expect(out).toMatch(/^Command timed out after 0\.3 seconds/);
    expect(standin.calls('/v1/shell/kill').map((c) => c.body.id)).toEqual([
      sandbox.defaultSessionId,
    ]);
    expect((await get(standin, '/v1/shell/sessions/stats')).body.data.active_sessions).toBe(0);
    expect(await sandbox.executeCommand('echo next')).toBe('next\n');
    // The same in a scope.
    await sandbox.executeCommandInScope('sleep 30', { scopeId: 's', timeoutMs: 300 });
    expect(await sandbox.executeCommandInScope('echo scoped', { scopeId: 's' })).toBe('scoped\n');
  });
});

describe('stand-in: glob and find', () => {
  it('find is a simple non-recursive glob with directories; glob is recursive', async () => {
    const { standin } = await setup();
    const root = path.join(standin.home, 'g');
    await mkdir(path.join(root, 'src', 'deep'), { recursive: true });
    await writeFile(path.join(root, 'top.ts'), '');
    await writeFile(path.join(root, 'src', 'deep', 'nested.ts'), '');
    const found = await post(standin, '/v1/file/find', { path: root, glob: '*' });
    expect(found.body.data.files).toEqual([path.join(root, 'src'), path.join(root, 'top.ts')]);
    const globbed = await post(standin, '/v1/file/glob', { path: root, pattern: '**/*.ts' });
    expect(globbed.body.data.files.map((f: { path: string }) => f.path)).toEqual([
      path.join(root, 'src', 'deep', 'nested.ts'),
      path.join(root, 'top.ts'),
    ]);
  });

  it.each([true, false])('the client finds nested files (glob endpoint: %s)', async (globApi) => {
    const { standin, sandbox } = await setup({ globApi });
    const root = path.join(standin.home, 'n');
    await mkdir(path.join(root, 'a', 'b'), { recursive: true });
    await writeFile(path.join(root, 'a', 'b', 'x.ts'), '');
    await writeFile(path.join(root, 'y.ts'), '');
    await writeFile(path.join(root, 'a', 'z.js'), '');
    expect((await sandbox.glob(root, '*.ts')).paths).toEqual([`${root}/a/b/x.ts`, `${root}/y.ts`]);
    expect((await sandbox.glob(root, '**/b/*.ts')).paths).toEqual([`${root}/a/b/x.ts`]);
    expect(standin.calls('/v1/file/find')).toHaveLength(0);
  });
});

describe('stand-in: the image’s error types and output limits', () => {
  it('reading a directory is invalid_target, a binary file decode_error', async () => {
    const { standin, sandbox } = await setup();
    await writeFile(path.join(standin.home, 'bin'), Buffer.from([0xff, 0xfe, 0x00, 0x80]));
    const dir = await post(standin, '/v1/file/read', { file: standin.home });
    expect(dir.body.data.error_type).toBe('invalid_target');
    const bin = await post(standin, '/v1/file/read', { file: path.join(standin.home, 'bin') });
    expect(bin.body.data.error_type).toBe('decode_error');
    await expect(sandbox.readFile(path.join(standin.home, 'bin'))).rejects.toMatchObject({
      kind: 'EILSEQ',
    });
    await expect(sandbox.readFile(standin.home)).rejects.toMatchObject({ kind: 'EISDIR' });
  });

  it('shell output is cut at 30,000 characters unless truncate is false; the client sends false', async () => {
    const { standin, sandbox } = await setup();
    const command = "head -c 40000 /dev/zero | tr '\\0' x";
    const cut = await post(standin, '/v1/shell/exec', { command });
    expect(cut.body.data.output.length).toBe(30_000);
    expect((await sandbox.executeCommand(command)).length).toBe(40_000);
  });

  it('deleting an unknown session answers 200 with success: false', async () => {
    const { standin } = await setup();
    const res = await fetch(`${standin.url}/v1/shell/sessions/nope`, { method: 'DELETE' });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { success: boolean }).success).toBe(false);
  });

  it('env-bearing commands close the bash session they open', async () => {
    const { standin, sandbox } = await setup();
    expect(await sandbox.executeCommand('echo "$V"', { env: { V: 'value' } })).toBe('value\n');
    expect(standin.openBashSessionIds()).toEqual([]);
  });
});

describe('stand-in: API key (SANDBOX_API_KEY)', () => {
  it('refuses calls without the key, accepts each of the three forms', async () => {
    const { standin } = await setup({ apiKey: 'k-123' });
    expect((await get(standin, '/v1/sandbox')).status).toBe(401);
    const withHeader = await fetch(`${standin.url}/v1/sandbox`, {
      headers: { 'X-AIO-API-Key': 'k-123' },
    });
    const withBearer = await fetch(`${standin.url}/v1/sandbox`, {
      headers: { Authorization: 'Bearer k-123' },
    });
    const withQuery = await fetch(`${standin.url}/v1/sandbox?api_key=k-123`);
    expect([withHeader.status, withBearer.status, withQuery.status]).toEqual([200, 200, 200]);
  });

  it.each([
    ['on', 'k-123', 'k-123', true],
    ['on, client without key', 'k-123', undefined, false],
    ['off', undefined, undefined, true],
  ] as const)('auth %s', async (_label, serverKey, clientKey, works) => {
    const { sandbox } = await setup(
      serverKey ? { apiKey: serverKey } : {},
      clientKey ? { apiKey: clientKey } : {},
    );
    const result = sandbox.executeCommand('echo authed');
    if (works) expect(await result).toBe('authed\n');
    else await expect(result).rejects.toThrow(/401/);
  });
});
