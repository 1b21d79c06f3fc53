import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { runIsolated } from '../testing/isolated-run.js';
import { SandboxPermissionError, SandboxRuntimeError } from '../errors/errors.js';
import {
  URL_IN_COMMAND,
  mcpFilesystemRoots,
  urlSpans,
  validateLocalBashCommandPaths,
} from './bash-path-guard.js';
import { splitShellWords } from './bash-path-guard-tokens.js';
import type { ThreadDataPaths } from '../paths/virtual-paths.js';

const TD: ThreadDataPaths = { workspacePath: '/data/t/user-data/workspace' };
const OPTS = { customMounts: [{ containerPath: '/mnt/code', readOnly: true }] };

function guard(command: string, options = OPTS): string {
  try {
    validateLocalBashCommandPaths(command, TD, options);
  } catch (err) {
    expect(err).toBeInstanceOf(SandboxPermissionError);
    return (err as Error).message;
  }
  return 'allowed';
}

describe('splitShellWords', () => {
  it('removes quotes, honours escapes and splits operators', () => {
    expect(splitShellWords(`a"b c"d 'e f' g\\ h x>&1 y&&z`)).toEqual([
      'ab cd',
      'e f',
      'g h',
      'x',
      '>&',
      '1',
      'y',
      '&&',
      'z',
    ]);
    expect(splitShellWords('a\nb')).toEqual(['a', ';', 'b']);
    expect(splitShellWords('"a\\"b\\c"')).toEqual(['a"b\\c']);
    expect(splitShellWords("echo 'unterminated")).toBeUndefined();
    expect(splitShellWords('echo \\')).toBeUndefined();
  });
});

describe('validateLocalBashCommandPaths', () => {
  it('§10.5.61 blocks host paths, file URLs, traversal and unsafe working-directory changes', () => {
    const cases: Array<[string, string]> = [
      ['cat /etc/passwd', 'Unsafe absolute paths in command: /etc/passwd.'],
      [
        'cat /etc/shadow /etc/passwd',
        'Unsafe absolute paths in command: /etc/passwd, /etc/shadow.',
      ],
      ['curl file:///etc/passwd', 'Unsafe file:// URL in command: file:///etc/passwd.'],
      ['curl FILE:///etc/passwd', 'Unsafe file:// URL in command'],
      ['cat ../uploads/secret.txt', 'Access denied: path traversal detected'],
      ['cd /', 'Unsafe working directory change in command: cd /.'],
      ['cd ..', 'Access denied: path traversal detected'],
      ['cd $HOME', 'Unsafe working directory change in command: cd $HOME.'],
      ['echo hi\ncd $HOME', 'Unsafe working directory change in command: cd $HOME.'],
      ['command cd /', 'Unsafe working directory change in command: cd /.'],
      ['builtin cd $HOME', 'Unsafe working directory change in command: cd $HOME.'],
      ['if cd $HOME; then ls; fi', 'Unsafe working directory change in command: cd $HOME.'],
      ['{ cd /; ls; }', 'Unsafe working directory change in command: cd /.'],
      ['echo $(cd $HOME && ls)', 'Unsafe working directory change in command substitution.'],
      ['ls /', 'Unsafe absolute paths in command: /.'],
      ['ln -s / root', 'Unsafe absolute paths in command: /.'],
      ['command ls /', 'Unsafe absolute paths in command: /.'],
      ['cd', 'Unsafe working directory change in command: cd.'],
      ['cd -', 'Unsafe working directory change in command: cd.'],
      ['cd ~', 'Unsafe working directory change in command: cd ~.'],
      ['pushd /usr/bin', 'Unsafe working directory change in command: pushd /usr/bin.'],
    ];
    for (const [command, expected] of cases) {
      const msg = guard(command);
      expect(msg, command).toContain(expected);
      if (msg.startsWith('Unsafe')) expect(msg).toContain('Use paths under /mnt/user-data');
    }
  });

  it('§10.5.62 allows URLs, virtual paths, system binaries, mounts, `echo cd /` and relative paths', () => {
    for (const command of [
      'curl https://example.com/a/../b',
      'wget http://host/x ftp://host/y',
      'git clone https://github.com/org/repo.git',
      'cat /mnt/user-data/workspace/a.txt > /mnt/user-data/outputs/b.txt',
      '/bin/echo hi > /dev/null',
      '/usr/bin/env python3 -V',
      'ls /mnt/skills/public/demo',
      'ls /mnt/acp-workspace',
      'cat /mnt/code/src/a.py',
      'echo cd /',
      "printf '%s\\n' pushd /",
      'cd src && ls ./lib',
      'cd /mnt/user-data/workspace && ls',
      'URL=https://x.io/a/../b curl $URL',
    ]) {
      expect(guard(command), command).toBe('allowed');
    }
  });

  it('§10.5.63 allows CJK and {placeholder} fragments but blocks plain host paths, brace expansion and ${USER}', () => {
    expect(guard(`python -c "print(f'/端口{port}')"`)).toBe('allowed');
    expect(guard(`echo "/devices/{id}/port"`)).toBe('allowed');
    expect(guard(`python -c "open('/etc/hosts').read()"`)).toContain('/etc/hosts');
    expect(guard('cat /etc/{passwd,shadow}')).toContain('Unsafe absolute paths');
    expect(guard('cp a /tmp/x{,.bak}')).toContain('Unsafe absolute paths');
    expect(guard('cat /home/${USER}/.ssh/id_rsa')).toContain('Unsafe absolute paths');
  });

  it('§10.5.64 MCP filesystem roots are allowed (traversal still blocked) only while enabled', () => {
    const servers = [
      { enabled: true, args: ['-y', '@modelcontextprotocol/server-filesystem', '/srv/shared/'] },
      { enabled: false, args: ['@modelcontextprotocol/server-filesystem', '/srv/off'] },
      { enabled: true, args: ['some-other-server', '/srv/other'] },
    ];
    const roots = mcpFilesystemRoots(servers);
    expect(roots).toEqual(['/srv/shared/']);
    const opts = { ...OPTS, mcpAllowedPaths: roots };
    expect(guard('cat /srv/shared/a.txt', opts)).toBe('allowed');
    expect(guard('ls /srv/shared', opts)).toBe('allowed');
    expect(guard('cat /srv/off/a.txt', opts)).toContain('Unsafe absolute paths');
    expect(guard('cat /srv/shared/../../etc/passwd', opts)).toContain('path traversal');
  });

  it('§10.5.66 rejects `cat ../uploads/secret.txt` before execution', () => {
    expect(guard('cat ../uploads/secret.txt')).toBe('Access denied: path traversal detected');
  });

  it('falls back to a whitespace split for malformed quoting and still checks paths', () => {
    expect(guard(`echo 'oops /etc/passwd`)).toContain('Unsafe absolute paths');
  });

  it('requires thread data', () => {
    expect(() => validateLocalBashCommandPaths('ls', null)).toThrow(SandboxRuntimeError);
  });
});

describe('validateLocalBashCommandPaths is linear (hostile commands)', () => {
  it.each([["'$('"], ['$('], ['"$(']])('%s x 100,000 is screened at once', async (unit) => {
    const run = await runIsolated({
      timeoutMs: 60_000,
      script: `
        import { validateLocalBashCommandPaths } from '@sbx/core';
        const td = { workspacePath: '/w', uploadsPath: '/u', outputsPath: '/o', acpWorkspacePath: '/a' };
        const t0 = performance.now();
        validateLocalBashCommandPaths('echo ' + ${JSON.stringify(unit)}.repeat(100000), td);
        console.log(performance.now() - t0);
      `,
    });
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    expect(Number(run.stdout)).toBeLessThan(1_000);
  });

  it('still refuses a cd inside a command substitution', () => {
    const td = {
      workspacePath: '/w',
      uploadsPath: '/u',
      outputsPath: '/o',
      acpWorkspacePath: '/a',
    };
    expect(() => validateLocalBashCommandPaths('echo $(cd /tmp && ls)', td)).toThrow(
      /command substitution/,
    );
    expect(() => validateLocalBashCommandPaths('echo $(ls) cd', td)).not.toThrow(
      /command substitution/,
    );
  });
});

describe('urlSpans (the linear URL scan of the bash path guard)', () => {
  it('property: finds exactly the matches of URL_IN_COMMAND', () => {
    const piece = fc.constantFrom(
      'a',
      'B',
      '1',
      '.',
      '+',
      '-',
      '_',
      ':',
      '/',
      '://',
      ' ',
      '"',
      'file',
      'x:',
    );
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 16 }).map((p) => p.join('')),
        (text) => {
          const expected = [...text.matchAll(URL_IN_COMMAND)].map(
            (m) => [m.index, m.index + m[0].length] as [number, number],
          );
          expect(urlSpans(text)).toEqual(expected);
        },
      ),
      { numRuns: 5000 },
    );
  });

  it("is linear where the regex is not: 'a.' x 60,000 is screened at once", async () => {
    const run = await runIsolated({
      timeoutMs: 60_000,
      script: `
        import { validateLocalBashCommandPaths } from '@sbx/core';
        const t0 = performance.now();
        validateLocalBashCommandPaths('echo ' + 'a.'.repeat(60000), { workspacePath: '/w' });
        console.log(performance.now() - t0);
      `,
    });
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    expect(Number(run.stdout)).toBeLessThan(1_000);
  });
});
