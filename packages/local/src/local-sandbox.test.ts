import {
  chmod,
  mkdir,
  mkdtemp,
  readFile,
  realpath,
  rm,
  symlink,
  truncate,
  writeFile,
} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  HostBashDisabledError,
  InvalidArgumentError,
  SandboxPermissionError,
  isSbxError,
  pathMapping,
} from '@sbx/core';
import { timeoutNotice } from '@sbx/core/provider-kit';
import type { Logger, SandboxFileError } from '@sbx/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalSandbox, MAX_DOWNLOAD_BYTES } from './local-sandbox.js';
import type { PosixRunOptions } from './posix-runner.js';
import { hasProcFs, killGroupQuietly, liveProcessesInGroup } from './proc-test-support.js';
import { findShell } from './shell.js';

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const push = (level: string) => (msg: string) => {
    lines.push(`${level}: ${msg}`);
  };
  return {
    lines,
    debug: push('debug'),
    info: push('info'),
    warn: push('warn'),
    error: push('error'),
  };
}

describe('LocalSandbox', () => {
  let tmp: string;
  let userData: string;
  let ws: string;
  let uploads: string;
  let outputs: string;
  let skills: string;
  let roMount: string;
  let outside: string;
  let logger: ReturnType<typeof recordingLogger>;
  let sb: LocalSandbox;

  beforeAll(async () => {
    tmp = await realpath(await mkdtemp(path.join(os.tmpdir(), 'sbx-local-')));
    userData = path.join(tmp, 'thread', 'user-data');
    ws = path.join(userData, 'workspace');
    uploads = path.join(userData, 'uploads');
    outputs = path.join(userData, 'outputs');
    skills = path.join(tmp, 'skills-public');
    roMount = path.join(tmp, 'ro-data');
    outside = path.join(tmp, 'outside');
    for (const d of [ws, uploads, outputs, skills, roMount, path.join(roMount, 'rw'), outside]) {
      await mkdir(d, { recursive: true });
    }
    await writeFile(path.join(outside, 'secret.txt'), 'outside-secret');
    await writeFile(path.join(roMount, 'data.txt'), 'read-only data');
    await writeFile(path.join(skills, 'SKILL.md'), 'skill');
    await symlink(outside, path.join(ws, 'out-dir'));
    await symlink(path.join(outside, 'secret.txt'), path.join(ws, 'out-file'));
    await symlink(roMount, path.join(ws, 'into-ro'));
    await symlink(path.join(roMount, 'rw'), path.join(roMount, 'rw-link'));
    logger = recordingLogger();
    sb = new LocalSandbox('local:u:t', {
      allowHostBash: true,
      logger,
      mappings: [
        pathMapping('/mnt/user-data', userData),
        pathMapping('/mnt/user-data/workspace', ws),
        pathMapping('/mnt/user-data/uploads', uploads),
        pathMapping('/mnt/user-data/outputs', outputs),
        pathMapping('/mnt/skills/public', skills, true),
        pathMapping('/mnt/user-data/ro', roMount, true),
        pathMapping('/mnt/user-data/ro/rw', path.join(roMount, 'rw')),
        pathMapping('/mnt/data', tmp),
      ],
    });
  });
  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  describe('executeCommand', () => {
    const savedKey = process.env.OPENAI_API_KEY;
    afterEach(() => {
      if (savedKey === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = savedKey;
    });

    it('§10.6.74 echo, exit code and Std Error', async () => {
      expect(await sb.executeCommand('echo hello')).toBe('hello\n');
      expect(await sb.executeCommand('exit 3')).toBe('\nExit Code: 3');
      expect(await sb.executeCommand('true')).toBe('(no output)');
      expect(await sb.executeCommand('echo err >&2')).toBe('err\n');
      expect(await sb.executeCommand('echo out; echo err >&2; exit 2')).toBe(
        'out\n\nStd Error:\nerr\n\nExit Code: 2',
      );
    });

    it.skipIf(!hasProcFs)('§10.6.68 `sleep & echo serving` returns with serving', async () => {
      const out = await sb.executeCommand('sleep 30 & echo "serving $!"');
      expect(out).toMatch(/^serving \d+\n$/);
      const bg = Number(out.trim().split(' ')[1]);
      const stat = await readFile(`/proc/${bg}/stat`, 'utf8');
      const pgid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
      // Still running after the call returned: the call did not wait for it.
      expect(await liveProcessesInGroup(pgid)).toContain(bg);
      killGroupQuietly(pgid);
    });

    it('§10.6.70 §10.6.71 a looping command times out with the notice', async () => {
      const out = await sb.executeCommand('while true; do sleep 0.2; done', { timeoutMs: 1000 });
      expect(out).toBe(timeoutNotice(1));
      expect(out).toContain('timed out after 1 second and was terminated');
      expect(out).toContain('> /mnt/user-data/workspace/server.log 2>&1 &');
      expect(out).not.toContain('Exit Code');
    });

    it.skipIf(!hasProcFs)('§10.6.72 on timeout the whole process group dies', async () => {
      const marker = path.join(tmp, 'group.pid');
      const out = await sb.executeCommand(
        `echo $$ > /mnt/data/group.pid; (while true; do touch /mnt/data/tick; sleep 0.1; done) & sleep 1000 & wait`,
        { timeoutMs: 1000 },
      );
      expect(out).toContain('timed out');
      const pgid = Number((await readFile(marker, 'utf8')).trim());
      expect(await liveProcessesInGroup(pgid)).toEqual([]);
    });

    it('§10.6.73 a command reading stdin gets EOF at once', async () => {
      expect(await sb.executeCommand('read x; echo got')).toBe('got\n');
    });

    it('§10.6.76 defaults to 600 s and passes a scrubbed explicit env', async () => {
      const seen: PosixRunOptions[] = [];
      const probe = new LocalSandbox('probe', {
        allowHostBash: true,
        runner: async (o) => {
          seen.push(o);
          return { stdout: 'ok', stderr: '', exitCode: 0, timedOut: false, pid: 1 };
        },
      });
      process.env.OPENAI_API_KEY = 'sk-parent-secret-value';
      await probe.executeCommand('true');
      expect(seen[0]?.timeoutMs).toBe(600_000);
      expect(seen[0]?.env.OPENAI_API_KEY).toBeUndefined();
      expect(seen[0]?.env.PATH).toBe(process.env.PATH);
      expect(seen[0]?.shell).toBe(await findShell());
    });

    it('§10.6.78 decodes command output as UTF-8 regardless of the locale', async () => {
      expect(
        await sb.executeCommand("printf '\\344\\275\\240\\345\\245\\275'", {
          env: { LC_ALL: 'C', LANG: 'C' },
        }),
      ).toBe('你好');
    });

    it('§10.6.79 injected env is visible per call and redacted; host secrets never are', async () => {
      process.env.OPENAI_API_KEY = 'sk-parent-secret-value';
      process.env.SBX_BENIGN_TEST_VAR = 'benign-value';
      try {
        // The reference's inheritance (scrub): benign variables pass, secrets do not.
        const scrub = new LocalSandbox('local:u:scrub', {
          allowHostBash: true,
          envPolicy: 'scrub',
        });
        const env = await scrub.executeCommand('env');
        expect(env).not.toContain('sk-parent-secret-value');
        expect(env).not.toContain('OPENAI_API_KEY');
        expect(env).toContain('SBX_BENIGN_TEST_VAR=benign-value');
        // The default allowlist inherits neither.
        const allowlisted = await sb.executeCommand('env');
        expect(allowlisted).not.toContain('OPENAI_API_KEY');
        expect(allowlisted).not.toContain('SBX_BENIGN_TEST_VAR');
        expect(allowlisted).toMatch(/^PATH=/m);
        const injected = {
          INJECTED_API_KEY: 'injected-secret-value',
          MYSQL_PWD: 'db-password-123',
        };
        expect(
          await sb.executeCommand(
            'test "$INJECTED_API_KEY" = injected-secret-value && test "$MYSQL_PWD" = db-password-123 && echo visible',
            { env: injected },
          ),
        ).toBe('visible\n');
        expect(await sb.executeCommand('echo "$INJECTED_API_KEY"', { env: injected })).toBe(
          '[redacted]\n',
        );
        expect(await sb.executeCommand('echo "v=$INJECTED_API_KEY"')).toBe('v=\n');
      } finally {
        delete process.env.SBX_BENIGN_TEST_VAR;
      }
    });

    it('§10.6.80 invalid env keys raise before any process is spawned', async () => {
      let spawned = 0;
      const probe = new LocalSandbox('probe', {
        allowHostBash: true,
        runner: async () => {
          spawned++;
          return { stdout: '', stderr: '', exitCode: 0, timedOut: false, pid: 1 };
        },
      });
      for (const key of ['X;rm -rf /mnt/user-data;Y', 'X`whoami`', 'X$(id)', '1FOO', '', 'X Y']) {
        expect(
          await rejection(probe.executeCommand('true', { env: { [key]: 'v' } })),
        ).toBeInstanceOf(InvalidArgumentError);
      }
      expect(spawned).toBe(0);
    });

    it('§10.6.82 without mappings, command text is passed through unchanged', async () => {
      const bare = new LocalSandbox('bare', { allowHostBash: true });
      expect(await bare.executeCommand('echo /mnt/user-data/x /mnt/skills')).toBe(
        '/mnt/user-data/x /mnt/skills\n',
      );
    });

    it('translates container paths in commands and masks host paths in output', async () => {
      await writeFile(path.join(ws, 'in.txt'), 'from-host\n');
      expect(await sb.executeCommand('cat /mnt/user-data/workspace/in.txt')).toBe('from-host\n');
      expect(await sb.executeCommand('cd /mnt/user-data/workspace && pwd')).toBe(
        '/mnt/user-data/workspace\n',
      );
      expect(await sb.executeCommand(`echo ${outputs}/x ${ws}`)).toBe(
        '/mnt/user-data/outputs/x /mnt/user-data/workspace\n',
      );
      expect(await sb.executeCommand('ls /mnt/user-data/workspace/nope')).toContain(
        '/mnt/user-data/workspace/nope',
      );
      expect(await sb.executeCommand('ls /mnt/user-data/workspace/nope')).not.toContain(tmp);
    });

    it('refuses a command whose container path escapes its mount, running nothing', async () => {
      const err = await rejection(
        sb.executeCommand('cat /mnt/user-data/workspace/out-dir/secret.txt; touch /mnt/data/ran'),
      );
      expect(err).toBeInstanceOf(SandboxPermissionError);
      expect(await sb.executeCommand('test -e /mnt/data/ran && echo ran || echo not-run')).toBe(
        'not-run\n',
      );
    });

    it('refuses to run anything while host bash is disabled', async () => {
      const off = new LocalSandbox('off', { mappings: [pathMapping('/mnt/data', tmp)] });
      const err = await rejection(off.executeCommand('touch /mnt/data/disabled-ran'));
      expect(err).toBeInstanceOf(HostBashDisabledError);
      expect((err as Error).message).toMatch(/^Host bash execution is disabled/);
      await expect(readFile(path.join(tmp, 'disabled-ran'))).rejects.toThrow();
    });
  });

  describe('files', () => {
    it('§10.7.83 read-only mounts refuse writes (EROFS); writable and nested writable accept', async () => {
      for (const op of [
        () => sb.writeFile('/mnt/skills/public/new.md', 'x'),
        () => sb.updateFile('/mnt/skills/public/new.bin', new Uint8Array([1])),
        () => sb.writeFile('/mnt/user-data/ro/data.txt', 'x'),
      ]) {
        const err = (await rejection(op())) as SandboxPermissionError;
        expect(err).toBeInstanceOf(SandboxPermissionError);
        expect(err.kind).toBe('EROFS');
      }
      expect(await readFile(path.join(roMount, 'data.txt'), 'utf8')).toBe('read-only data');
      await sb.writeFile('/mnt/user-data/ro/rw/ok.txt', 'nested writable');
      expect(await readFile(path.join(roMount, 'rw', 'ok.txt'), 'utf8')).toBe('nested writable');
      await sb.writeFile('/mnt/user-data/outputs/ok.txt', 'writable');
      expect(await readFile(path.join(outputs, 'ok.txt'), 'utf8')).toBe('writable');
    });

    it('§10.7.84 symlink escapes: readFile, downloadFile, writeFile are EACCES; outside unchanged', async () => {
      for (const op of [
        () => sb.readFile('/mnt/user-data/workspace/out-file'),
        () => sb.readFile('/mnt/user-data/workspace/out-dir/secret.txt'),
        () => sb.downloadFile('/mnt/user-data/workspace/out-file'),
        () => sb.writeFile('/mnt/user-data/workspace/out-file', 'overwritten'),
        () => sb.writeFile('/mnt/user-data/workspace/out-dir/new.txt', 'planted'),
      ]) {
        const err = (await rejection(op())) as SandboxPermissionError;
        expect(err).toBeInstanceOf(SandboxPermissionError);
        expect(err.kind).toBe('EACCES');
        expect(err.message).not.toContain(tmp);
      }
      expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('outside-secret');
      await expect(readFile(path.join(outside, 'new.txt'))).rejects.toThrow();
    });

    it('§10.7.85 a link into a nested read-only mount, or through one, is EROFS and writes nothing', async () => {
      // /mnt/data covers all of tmp; its link `thread/user-data/workspace/into-ro` lands in ro-data.
      const viaLink = (await rejection(
        sb.writeFile('/mnt/data/thread/user-data/workspace/into-ro/planted.txt', 'x'),
      )) as SandboxPermissionError;
      expect(viaLink.kind).toBe('EROFS');
      // Through the read-only mount's own link into its nested writable mount: still read-only.
      const through = (await rejection(
        sb.writeFile('/mnt/user-data/ro/rw-link/x.txt', 'x'),
      )) as SandboxPermissionError;
      expect(through.kind).toBe('EROFS');
      await expect(readFile(path.join(roMount, 'planted.txt'))).rejects.toThrow();
      await expect(readFile(path.join(roMount, 'rw', 'x.txt'))).rejects.toThrow();
    });

    it('§10.7.86 downloadFile: mappings, virtual names in errors, refusal outside /mnt/user-data, read-only mounts', async () => {
      await writeFile(path.join(uploads, 'doc.bin'), Buffer.from([1, 2, 3]));
      expect(Array.from(await sb.downloadFile('/mnt/user-data/uploads/doc.bin'))).toEqual([
        1, 2, 3,
      ]);
      expect(Array.from(await sb.downloadFile('mnt\\user-data\\uploads\\doc.bin'))).toEqual([
        1, 2, 3,
      ]);
      expect(Buffer.from(await sb.downloadFile('/mnt/user-data/ro/data.txt')).toString()).toBe(
        'read-only data',
      );
      const missing = (await rejection(
        sb.downloadFile('/mnt/user-data/uploads/nope.pdf'),
      )) as SandboxFileError;
      expect(missing.kind).toBe('ENOENT');
      expect(missing.path).toBe('/mnt/user-data/uploads/nope.pdf');
      expect(missing.message).not.toContain(tmp);
      const refused = (await rejection(
        sb.downloadFile('/mnt/skills/public/SKILL.md'),
      )) as SandboxPermissionError;
      expect(refused.kind).toBe('EACCES');
      expect(refused.baseMessage).toBe("Access denied: path must be under '/mnt/user-data'");
      expect(
        logger.lines.some((l) => l.startsWith('error: Refused download outside allowed directory')),
      ).toBe(true);
      expect(await rejection(sb.downloadFile('/mnt/user-datax/a'))).toBeInstanceOf(
        SandboxPermissionError,
      );
    });

    it('downloadFile refuses files over 100 MiB', async () => {
      const big = path.join(uploads, 'big.bin');
      await writeFile(big, '');
      await truncate(big, MAX_DOWNLOAD_BYTES + 1);
      const err = (await rejection(
        sb.downloadFile('/mnt/user-data/uploads/big.bin'),
      )) as SandboxFileError;
      expect(err.kind).toBe('EFBIG');
      expect(err.baseMessage).toBe('File exceeds maximum download size of 104857600 bytes');
      await rm(big);
    });

    it('§10.7.87 writeFile stores host paths; readFile reverses them only for files this sandbox wrote', async () => {
      const text = 'see /mnt/user-data/outputs/report.md and /mnt/skills/public/SKILL.md\n';
      await sb.writeFile('/mnt/user-data/workspace/notes.md', text);
      const raw = await readFile(path.join(ws, 'notes.md'), 'utf8');
      expect(raw).toBe(`see ${outputs}/report.md and ${skills}/SKILL.md\n`);
      expect(raw).not.toContain('\\');
      expect(await sb.readFile('/mnt/user-data/workspace/notes.md')).toBe(text);
      // Not written through this sandbox: returned exactly as stored.
      await writeFile(path.join(uploads, 'upload.txt'), `path ${outputs}/x\n`);
      expect(await sb.readFile('/mnt/user-data/uploads/upload.txt')).toBe(`path ${outputs}/x\n`);
      const other = new LocalSandbox('other', { mappings: sb.mappings });
      expect(await other.readFile('/mnt/user-data/workspace/notes.md')).toBe(raw);
    });

    it('§10.7.88 ranged reads return exactly the requested lines and never read past them', async () => {
      await sb.writeFile(
        '/mnt/user-data/workspace/lines.txt',
        'line1\nline2\nline3\nline4\nline5\n',
      );
      const p = '/mnt/user-data/workspace/lines.txt';
      expect(await sb.readFile(p, { startLine: 3 })).toBe('line3\nline4\nline5');
      expect(await sb.readFile(p, { endLine: 2 })).toBe('line1\nline2');
      expect(await sb.readFile(p, { startLine: 2, endLine: 4 })).toBe('line2\nline3\nline4');
      expect(await sb.readFile(p, { startLine: 99 })).toBe('');
      expect(await sb.readFile(p, { startLine: 0, endLine: 1 })).toBe('line1');
      // Valid head, invalid tail far beyond the range: a streaming read never decodes the tail.
      const head = Array.from({ length: 10 }, (_, i) => `row${i + 1}`).join('\n');
      await writeFile(
        path.join(ws, 'mixed.txt'),
        Buffer.concat([
          Buffer.from(`${head}\n`),
          Buffer.alloc(200_000, 0x61),
          Buffer.from([0xff, 0xfe]),
        ]),
      );
      expect(
        await sb.readFile('/mnt/user-data/workspace/mixed.txt', { startLine: 2, endLine: 3 }),
      ).toBe('row2\nrow3');
      const whole = (await rejection(
        sb.readFile('/mnt/user-data/workspace/mixed.txt'),
      )) as SandboxFileError;
      expect(whole.kind).toBe('EILSEQ');
    });

    it('reads with universal newlines, strict UTF-8 and a typed error for directories', async () => {
      await writeFile(path.join(ws, 'crlf.txt'), 'a\r\nb\rc\n');
      expect(await sb.readFile('/mnt/user-data/workspace/crlf.txt')).toBe('a\nb\nc\n');
      expect(await sb.readFile('/mnt/user-data/workspace/crlf.txt', { startLine: 2 })).toBe('b\nc');
      const dir = (await rejection(sb.readFile('/mnt/user-data/workspace'))) as SandboxFileError;
      expect(dir.kind).toBe('EISDIR');
      const missing = (await rejection(
        sb.readFile('/mnt/user-data/workspace/none'),
      )) as SandboxFileError;
      expect(missing.kind).toBe('ENOENT');
      expect(missing.message).toBe(
        'No such file or directory: /mnt/user-data/workspace/none (path=/mnt/user-data/workspace/none, operation=read)',
      );
    });

    it('a ranged read across a CRLF split between stream chunks counts one line break', async () => {
      const first = 'x'.repeat(64 * 1024 - 1);
      await writeFile(path.join(ws, 'split.txt'), `${first}\r\nsecond\r\nthird`);
      expect(await sb.readFile('/mnt/user-data/workspace/split.txt', { startLine: 2 })).toBe(
        'second\nthird',
      );
    });

    it('§10.6.78 writes and reads UTF-8', async () => {
      await sb.writeFile('/mnt/user-data/workspace/utf8.txt', '中文 ü\n');
      expect(await readFile(path.join(ws, 'utf8.txt'))).toEqual(Buffer.from('中文 ü\n', 'utf8'));
      expect(await sb.readFile('/mnt/user-data/workspace/utf8.txt')).toBe('中文 ü\n');
    });

    it('§10.7.89 updateFile bytes to an uploads path reads back', async () => {
      const bytes = new Uint8Array([0x25, 0x50, 0x44, 0x46, 0, 0xff]);
      await sb.updateFile('/mnt/user-data/uploads/new/x.pdf', bytes);
      expect(Array.from(await sb.downloadFile('/mnt/user-data/uploads/new/x.pdf'))).toEqual(
        Array.from(bytes),
      );
    });

    it('append creates and extends; parent directories are created', async () => {
      await sb.writeFile('/mnt/user-data/outputs/a/b/log.txt', 'one\n', { append: true });
      await sb.writeFile('/mnt/user-data/outputs/a/b/log.txt', 'two\n', { append: true });
      expect(await sb.readFile('/mnt/user-data/outputs/a/b/log.txt')).toBe('one\ntwo\n');
    });

    it('maps permission errors of the host to typed errors', async () => {
      if (process.getuid?.() === 0) return; // root reads everything
      await writeFile(path.join(ws, 'locked.txt'), 'x');
      await chmod(path.join(ws, 'locked.txt'), 0o000);
      const err = await rejection(sb.readFile('/mnt/user-data/workspace/locked.txt'));
      expect(err).toBeInstanceOf(SandboxPermissionError);
    });
  });

  describe('listDir, glob, grep', () => {
    it('lists virtual paths with mount overlay and no duplicates', async () => {
      const entries = await sb.listDir('/mnt/user-data', { maxDepth: 1 });
      expect(entries).toEqual([...entries].sort());
      expect(entries).toContain('/mnt/user-data/workspace/');
      expect(entries).toContain('/mnt/user-data/ro/');
      expect(entries.filter((e) => e === '/mnt/user-data/ro/')).toHaveLength(1);
      expect(entries.every((e) => e.startsWith('/mnt/user-data/'))).toBe(true);
      const skillsView = new LocalSandbox('s', {
        mappings: [
          pathMapping('/mnt/skills/public', skills, true),
          pathMapping('/mnt/skills/custom', uploads, true),
        ],
      });
      expect(await skillsView.listDir('/mnt/skills', { maxDepth: 1 })).toEqual([
        '/mnt/skills/custom/',
        '/mnt/skills/public/',
      ]);
    });

    it('lists a link to a directory inside the mount under its target path', async () => {
      await mkdir(path.join(ws, 'nested', 'linked-dir'), { recursive: true });
      await symlink(path.join(ws, 'nested', 'linked-dir'), path.join(ws, 'dir-link'));
      const entries = await sb.listDir('/mnt/user-data/workspace');
      expect(entries).toContain('/mnt/user-data/workspace/nested/linked-dir/');
      expect(entries).not.toContain('/mnt/user-data/workspace/dir-link');
      expect(entries).not.toContain('/mnt/user-data/workspace/out-dir/');
      expect(entries.some((e) => e.includes(tmp))).toBe(false);
    });

    it('refuses to list through an escaping link and returns [] for a missing directory', async () => {
      expect(await rejection(sb.listDir('/mnt/user-data/workspace/out-dir'))).toBeInstanceOf(
        SandboxPermissionError,
      );
      expect(await sb.listDir('/mnt/user-data/workspace/missing')).toEqual([]);
    });

    it('glob and grep report virtual paths', async () => {
      await sb.writeFile('/mnt/user-data/outputs/g/one.py', 'needle = 1\n');
      await sb.writeFile('/mnt/user-data/outputs/g/two.txt', 'no\n');
      const g = await sb.glob('/mnt/user-data/outputs/g', '*.py');
      expect(g).toEqual({ paths: ['/mnt/user-data/outputs/g/one.py'], truncated: false });
      const r = await sb.grep('/mnt/user-data/outputs/g', 'NEEDLE');
      expect(r.matches).toEqual([
        { path: '/mnt/user-data/outputs/g/one.py', lineNumber: 1, line: 'needle = 1' },
      ]);
      const missing = await rejection(sb.glob('/mnt/user-data/outputs/none', '*'));
      expect(isSbxError(missing)).toBe(true);
      expect((missing as Error).message).not.toContain(tmp);
    });
  });
});
