import { spawnSync } from 'node:child_process';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { recordingLogger } from '@sbx/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  MAX_CLI_SESSION_BYTES,
  MAX_CLI_SESSION_MARKS,
  cliToolSessionFile,
  loadCliToolSession,
  saveCliToolSession,
} from './cli-tool-session.js';
import { ExitCode } from './exit-codes.js';
import { sbx, tempDir } from './test-support.js';

const NOTE = '/mnt/user-data/workspace/note.md';
const HASH = 'a'.repeat(64);

describe('sbx tool: one session per thread across invocations', () => {
  let home: { dir: string; remove: () => Promise<void> };
  const env = () => ({ SBX_HOME: home.dir });
  const tool = (name: string, args: unknown, extra: string[] = []) =>
    sbx(['tool', ...extra, name, JSON.stringify(args)], { env: env() });

  beforeEach(async () => {
    home = await tempDir('tool-session');
  });
  afterEach(async () => {
    await home.remove();
  });

  it('str_replace after a read_file in an earlier invocation edits the file', async () => {
    // Made outside the tools, so no call of the thread has seen it.
    expect(await sbx(['exec', '--', 'echo v1 > note.md'], { env: env() })).toMatchObject({
      code: 0,
    });
    // A file the thread's session has not read is still refused...
    const blind = await tool('write_file', { path: NOTE, content: 'v0\n' });
    expect(blind.code).toBe(ExitCode.FAILURE);
    expect(await tool('read_file', { path: NOTE })).toMatchObject({ code: 0, stdout: 'v1\n' });
    // ... and one it has read is edited, by a later invocation.
    const edit = await tool('str_replace', { path: NOTE, old_str: 'v1', new_str: 'v2' });
    expect(edit).toMatchObject({ code: 0, stdout: 'OK\n', stderr: '' });
    const again = await tool('str_replace', { path: NOTE, old_str: 'v2', new_str: 'v3' });
    expect(again).toMatchObject({ code: 0, stdout: 'OK\n' });
    expect(await tool('read_file', { path: NOTE })).toMatchObject({ stdout: 'v3\n' });
  });

  it('keeps threads apart, and refuses an edit of a file changed since it was read', async () => {
    await tool('write_file', { path: NOTE, content: 'v1\n' });
    await tool('read_file', { path: NOTE });
    const other = await sbx(
      ['tool', '-t', 'other', 'write_file', JSON.stringify({ path: NOTE, content: 'x\n' })],
      { env: env() },
    );
    expect(other.code).toBe(0);
    await sbx(['exec', '--', 'echo changed > note.md'], { env: env() });
    const stale = await tool('str_replace', { path: NOTE, old_str: 'v1', new_str: 'v2' });
    expect(stale.code).toBe(ExitCode.FAILURE);
    expect(stale.stdout).toContain('have not read its current version');
  });
});

describe('the session file is untrusted input', () => {
  let dir: { dir: string; remove: () => Promise<void> };
  let file: string;
  beforeEach(async () => {
    dir = await tempDir('tool-session-file');
    file = cliToolSessionFile(dir.dir, 'alice', 't1');
    await mkdir(path.dirname(file), { recursive: true });
  });
  afterEach(async () => {
    await dir.remove();
  });

  it('names the file by a hash of the ids, never by the ids', () => {
    const name = path.basename(cliToolSessionFile(dir.dir, 'a', '..'));
    expect(name).toMatch(/^[0-9a-f]{64}\.json$/);
    expect(cliToolSessionFile(dir.dir, 'a', 'b:c')).not.toBe(
      cliToolSessionFile(dir.dir, 'a:b', 'c'),
    );
  });

  it('round-trips, keeping the newest marks up to the limit', async () => {
    const logger = recordingLogger();
    const session = await loadCliToolSession(file, logger);
    for (let i = 0; i < MAX_CLI_SESSION_MARKS + 5; i++) session.recordRead('s', `/p/${i}`, HASH);
    await saveCliToolSession(file, session, logger);
    const back = await loadCliToolSession(file, logger);
    expect(back.size).toBe(MAX_CLI_SESSION_MARKS);
    expect(back.readMark('s', '/p/4')).toBeUndefined();
    expect(back.readMark('s', `/p/${MAX_CLI_SESSION_MARKS + 4}`)).toBe(HASH);
    expect(logger.lines).toEqual([]);
  });

  it.each([
    ['not JSON', '{"readMarks": ['],
    ['no mark list', '{"marks": []}'],
    [
      'a mark whose fingerprint is not a string',
      JSON.stringify({ readMarks: [{ sandboxId: 's', path: '/p', hash: 7 }] }),
    ],
    [
      'an oversized fingerprint',
      JSON.stringify({ readMarks: [{ sandboxId: 's', path: '/p', hash: 'f'.repeat(257) }] }),
    ],
    ['a mark that is not an object', JSON.stringify({ readMarks: [null] })],
    [
      'too many marks',
      JSON.stringify({
        readMarks: Array.from({ length: MAX_CLI_SESSION_MARKS + 1 }, (_, i) => ({
          sandboxId: 's',
          path: `/p/${i}`,
          hash: HASH,
        })),
      }),
    ],
  ])('starts without marks, with a warning, from a file with %s', async (_name, text) => {
    await writeFile(file, text);
    const logger = recordingLogger();
    expect((await loadCliToolSession(file, logger)).size).toBe(0);
    expect(logger.lines.map((l) => l.level)).toEqual(['warn']);
  });

  it('refuses an oversized file unread, and a link', async () => {
    await writeFile(file, ' '.repeat(MAX_CLI_SESSION_BYTES + 1));
    const logger = recordingLogger();
    expect((await loadCliToolSession(file, logger)).size).toBe(0);
    expect(logger.text()).toContain('larger than');
    const target = path.join(dir.dir, 'elsewhere.json');
    await writeFile(
      target,
      JSON.stringify({ readMarks: [{ sandboxId: 's', path: '/p', hash: HASH }] }),
    );
    const linked = cliToolSessionFile(dir.dir, 'alice', 'linked');
    await symlink(target, linked);
    const linkLogger = recordingLogger();
    expect((await loadCliToolSession(linked, linkLogger)).size).toBe(0);
    expect(linkLogger.lines.map((l) => l.level)).toEqual(['warn']);
  });

  it('refuses a FIFO at its place without waiting for a writer', async () => {
    expect(spawnSync('mkfifo', [file]).status).toBe(0);
    const logger = recordingLogger();
    expect((await loadCliToolSession(file, logger)).size).toBe(0);
    expect(logger.text()).toContain('not a regular file');
  });

  it('saves by replacing the file, never writing through a link there', async () => {
    const target = path.join(dir.dir, 'elsewhere.json');
    await writeFile(target, 'untouched');
    await symlink(target, file);
    const logger = recordingLogger();
    const session = await loadCliToolSession(path.join(dir.dir, 'none.json'), logger);
    session.recordRead('s', '/p', HASH);
    await saveCliToolSession(file, session, logger);
    expect(await readFile(target, 'utf8')).toBe('untouched');
    expect((await loadCliToolSession(file, logger)).readMark('s', '/p')).toBe(HASH);
  });
});
