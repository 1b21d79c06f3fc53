import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commandLineOf } from './exec-command.js';
import { ExitCode } from './exit-codes.js';
import { importerWith, memoryProviderClass, sbx, tempDir } from './test-support.js';

describe('sbx exec on the local provider', () => {
  let home: { dir: string; remove: () => Promise<void> };
  const env = () => ({ SBX_HOME: home.dir });

  beforeEach(async () => {
    home = await tempDir('exec');
  });
  afterEach(async () => {
    await home.remove();
  });

  it("prints the command's output and exits 0, starting in the thread's workspace", async () => {
    const run = await sbx(['exec', '--', 'echo hello && pwd'], { env: env() });
    expect(run).toMatchObject({ code: 0, stdout: 'hello\n/mnt/user-data/workspace\n' });
  });

  it("exits with the command's own status, output still printed", async () => {
    const run = await sbx(['exec', '--', 'echo partial; exit 7'], { env: env() });
    expect(run.code).toBe(7);
    expect(run.stdout).toBe('partial\n');
  });

  it('treats several words as an argument vector (each quoted)', async () => {
    const run = await sbx(['exec', '--', 'printf', '%s|', 'a b', '$HOME'], { env: env() });
    expect(run).toMatchObject({ code: 0, stdout: 'a b|$HOME|\n' });
  });

  it('works in the directories of --user/--thread', async () => {
    const run = await sbx(
      ['exec', '--user', 'alice', '--thread', 't1', '--', 'echo note > note.txt'],
      { env: env() },
    );
    expect(run.code).toBe(0);
    const file = path.join(home.dir, 'users/alice/threads/t1/user-data/workspace/note.txt');
    expect(await readFile(file, 'utf8')).toBe('note\n');
  });

  it('reports output and status as JSON with --json', async () => {
    const run = await sbx(['exec', '--json', '--', 'echo out; exit 3'], { env: env() });
    expect(run.code).toBe(3);
    expect(JSON.parse(run.stdout)).toEqual({
      ok: true,
      sandboxId: 'local:default:cli',
      exitCode: 3,
      timedOut: false,
      output: 'out\n',
    });
  });

  it('exits 124 when the command runs into --timeout', async () => {
    const run = await sbx(['exec', '--timeout', '0.5', '--', 'sleep 5'], { env: env() });
    expect(run.code).toBe(ExitCode.EXEC_TIMEOUT);
    expect(run.stderr).toMatch(/Command timed out after 0.5 seconds/);
  });

  it('exits 2 without a command or with a bad --timeout', async () => {
    expect((await sbx(['exec'], { env: env() })).code).toBe(ExitCode.USAGE);
    expect((await sbx(['exec', '--timeout', '-1', '--', 'true'], { env: env() })).code).toBe(
      ExitCode.USAGE,
    );
  });

  it('exits 2 for a user id that cannot be a directory name', async () => {
    const run = await sbx(['exec', '--user', '../x', '--', 'true'], { env: env() });
    expect(run.code).toBe(ExitCode.USAGE);
    expect(run.stderr).toMatch(/Invalid userId/);
  });

  it('exits 125 when the provider cannot be loaded', async () => {
    const run = await sbx(['exec', '--provider', '@sbx/not-installed', '--', 'true'], {
      env: env(),
    });
    expect(run.code).toBe(ExitCode.EXEC_SBX_ERROR);
    expect(run.stderr).toMatch(/not installed/);
  });

  it('exits 125 and reports an unreadable config file with its issues', async () => {
    const run = await sbx(['exec', '--json', '--config', 'missing.yaml', '--', 'true'], {
      env: env(),
      cwd: home.dir,
    });
    expect(run.code).toBe(ExitCode.EXEC_SBX_ERROR);
    expect(JSON.parse(run.stdout)).toMatchObject({
      ok: false,
      error: { code: 'CONFIG_INVALID', issues: [{ path: '', message: 'file not found' }] },
    });
  });
});

describe('sbx exec on a remote-style provider', () => {
  it('addresses the workspace by its virtual path and releases the sandbox afterwards', async () => {
    const fake = memoryProviderClass({
      idPrefix: 'remote',
      sandboxOptions: { onCommand: (command) => `ran: ${command}\nExit Code: 5` },
    });
    const run = await sbx(['exec', '--provider', '@fake/remote', '--', 'make test'], {
      importer: importerWith({ '@fake/remote': { default: fake.Provider } }),
    });
    expect(run.code).toBe(5);
    expect(run.stdout).toBe('ran: cd /mnt/user-data/workspace; make test\n');
    const [provider] = fake.instances;
    expect(provider?.acquireCalls).toEqual([{ userId: 'default', threadId: 'cli' }]);
    expect(provider?.releaseCalls).toEqual(['remote:default:cli']);
  });
});

describe('commandLineOf', () => {
  it('keeps one word as written and quotes several', () => {
    expect(commandLineOf(['a && b'])).toBe('a && b');
    expect(commandLineOf(['echo', "it's", 'x'])).toBe(`echo 'it'\\''s' x`);
  });
});
