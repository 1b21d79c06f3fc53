import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExitCode } from './exit-codes.js';
import { parseToolArguments } from './tool-command.js';
import { sbx, tempDir } from './test-support.js';
import { LocalSandboxProvider } from '@sbx/local';
import { silentLogger } from '@sbx/core';
import { servicesRequired } from '@sbx/core/testing';

const NOTE = '/mnt/user-data/workspace/note.md';

describe('sbx tool', () => {
  let home: { dir: string; remove: () => Promise<void> };
  const env = () => ({ SBX_HOME: home.dir });

  beforeEach(async () => {
    home = await tempDir('tool');
  });
  afterEach(async () => {
    await home.remove();
  });

  it('write_file then read_file in a later invocation sees the file', async () => {
    const write = await sbx(
      ['tool', 'write_file', JSON.stringify({ path: NOTE, content: 'hello\n' })],
      {
        env: env(),
      },
    );
    expect(write).toMatchObject({ code: 0, stdout: 'OK\n' });
    const read = await sbx(['tool', 'read_file', JSON.stringify({ path: NOTE })], { env: env() });
    expect(read).toMatchObject({ code: 0, stdout: 'hello\n' });
  });

  it('runs the other tools against the same thread', async () => {
    await sbx(['tool', 'write_file', JSON.stringify({ path: NOTE, content: 'TODO: ship\n' })], {
      env: env(),
    });
    const grep = await sbx(
      ['tool', 'grep', JSON.stringify({ pattern: 'todo', path: '/mnt/user-data/workspace' })],
      {
        env: env(),
      },
    );
    expect(grep.code).toBe(0);
    expect(grep.stdout).toContain(`${NOTE}:1: TODO: ship`);
    const ls = await sbx(['tool', 'ls', JSON.stringify({ path: '/mnt/user-data/workspace' })], {
      env: env(),
    });
    expect(ls.stdout).toContain('note.md');
  });

  it('exits 1 and prints the error result when the tool fails', async () => {
    const run = await sbx(['tool', 'read_file', JSON.stringify({ path: '/etc/passwd' })], {
      env: env(),
    });
    expect(run.code).toBe(ExitCode.FAILURE);
    expect(run.stdout).toMatch(/^Error: /);
  });

  it('runs bash confined without --allow-host-bash where the host confines, else keeps it off', async () => {
    const args = ['tool', 'bash', JSON.stringify({ command: 'echo hi' })];
    const probe = new LocalSandboxProvider({ baseDir: home.dir, logger: silentLogger });
    const confined = probe.confined;
    await probe.shutdown();
    const plain = await sbx(args, { env: env() });
    if (confined) {
      expect(plain).toMatchObject({ code: 0, stdout: 'hi\n' });
    } else {
      expect(servicesRequired()).toBe(false);
      expect(plain.code).toBe(ExitCode.FAILURE);
      expect(plain.stdout).toMatch(/Host bash execution is disabled/);
    }
    const allowed = await sbx([...args, '--allow-host-bash'], { env: env() });
    expect(allowed).toMatchObject({ code: 0, stdout: 'hi\n' });
  });

  it('bash `false` exits 1 and "Error:" printed with status 0 exits 0', async () => {
    const failed = await sbx(
      ['tool', 'bash', JSON.stringify({ command: 'false' }), '--allow-host-bash'],
      { env: env() },
    );
    expect(failed.code).toBe(ExitCode.FAILURE);
    const printed = await sbx(
      ['tool', 'bash', JSON.stringify({ command: 'echo "Error: fine"' }), '--allow-host-bash'],
      { env: env() },
    );
    expect(printed).toMatchObject({ code: 0, stdout: 'Error: fine\n' });
  });

  it('prints a JSON document with --json', async () => {
    const run = await sbx(
      ['tool', '--json', 'write_file', JSON.stringify({ path: NOTE, content: 'x' })],
      { env: env() },
    );
    expect(JSON.parse(run.stdout)).toEqual({
      ok: true,
      tool: 'write_file',
      sandboxId: 'local:default:cli',
      result: 'OK',
    });
  });

  it('a file whose text starts with "Error:" reads with exit 0: the tool decides, not the text', async () => {
    const content = 'Error: this line is data\n';
    await sbx(['tool', 'write_file', JSON.stringify({ path: NOTE, content })], { env: env() });
    const read = await sbx(['tool', 'read_file', JSON.stringify({ path: NOTE })], { env: env() });
    expect(read).toMatchObject({ code: ExitCode.OK, stdout: content });
  });

  it('prints {ok:false, error:{code, message}} for a failed tool with --json', async () => {
    const missing = '/mnt/user-data/workspace/missing.md';
    const run = await sbx(['tool', '--json', 'read_file', JSON.stringify({ path: missing })], {
      env: env(),
    });
    expect(run.code).toBe(ExitCode.FAILURE);
    expect(JSON.parse(run.stdout)).toEqual({
      ok: false,
      tool: 'read_file',
      sandboxId: 'local:default:cli',
      error: { code: 'NOT_FOUND', message: `File not found: ${missing}` },
    });
  });

  it('exits 3 naming the host when the E2B API is unreachable', async () => {
    const { createServer } = await import('node:net');
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const config = `${home.dir}/e2b.yaml`;
    const { writeFile } = await import('node:fs/promises');
    await writeFile(
      config,
      [
        'sandbox:',
        '  use: "@sbx/e2b"',
        '  e2b:',
        '    api_key: e2b_test_key',
        `    api_url: http://127.0.0.1:${port}`,
        '',
      ].join('\n'),
    );
    const run = await sbx(
      ['tool', '--json', '--config', config, 'ls', JSON.stringify({ path: '/mnt/user-data' })],
      { env: env() },
    );
    expect(run.code).toBe(ExitCode.UNAVAILABLE);
    const printed = JSON.parse(run.stdout) as {
      ok: boolean;
      error: { code: string; message: string };
    };
    expect(printed.ok).toBe(false);
    expect(printed.error.code).toBe('SANDBOX_RUNTIME');
    expect(printed.error.message).toContain(`E2B API at 127.0.0.1:${port} is unreachable`);
    expect(run.stdout).not.toContain('e2b_test_key');
  });

  it('exits 2 for an unknown tool or arguments that are not a JSON object', async () => {
    const unknown = await sbx(['tool', 'rm', '{}'], { env: env() });
    expect(unknown.code).toBe(ExitCode.USAGE);
    expect(unknown.stderr).toMatch(/unknown tool 'rm'; the tools are bash, ls/);
    expect((await sbx(['tool', 'ls', '{path'], { env: env() })).code).toBe(ExitCode.USAGE);
    expect((await sbx(['tool', 'ls', '[1]'], { env: env() })).code).toBe(ExitCode.USAGE);
  });
});

describe('parseToolArguments', () => {
  it('accepts an object, treats missing text as {}, rejects everything else', () => {
    expect(parseToolArguments('{"a":1}')).toEqual({ a: 1 });
    expect(parseToolArguments(undefined)).toEqual({});
    expect(parseToolArguments('  ')).toEqual({});
    expect(() => parseToolArguments('null')).toThrow(/JSON object/);
    expect(() => parseToolArguments('"x"')).toThrow(/JSON object/);
  });
});
