import { readFile, readdir, writeFile } from 'node:fs/promises';
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
    expect(JSON.parse(run.stdout)).toMatchObject({
      ok: true,
      sandboxId: 'local:default:cli',
      exitCode: 3,
      timedOut: false,
      output: 'out\n',
      stdout: 'out\n',
      stderr: '',
      truncated: false,
    });
  });

  it('sends stderr to stderr and stdout to stdout', async () => {
    const run = await sbx(['exec', '--', 'echo out; echo err >&2'], { env: env() });
    expect(run).toMatchObject({ code: 0, stdout: 'out\n', stderr: 'err\n' });
  });

  it('"Error:" with status 0 exits 0; `false` exits 1', async () => {
    expect(await sbx(['exec', '--', 'echo "Error: x"'], { env: env() })).toMatchObject({
      code: 0,
      stdout: 'Error: x\n',
    });
    expect((await sbx(['exec', '--', 'false'], { env: env() })).code).toBe(1);
  });

  it('streams output as it is printed (the command waits for the test to see it)', async () => {
    const gate = path.join(home.dir, 'users/default/threads/cli/user-data/workspace/go');
    let opened = false;
    const run = await sbx(
      [
        'exec',
        '--',
        'echo first; i=0; while [ ! -e go ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; echo second',
      ],
      {
        env: env(),
        onStdout: (soFar) => {
          if (!opened && soFar.includes('first')) {
            opened = true;
            void writeFile(gate, '');
          }
        },
      },
    );
    expect(run).toMatchObject({ code: 0, stdout: 'first\nsecond\n' });
    expect(opened).toBe(true);
  });

  it('Ctrl-C kills the command in the sandbox and exits 130', async () => {
    const controller = new AbortController();
    // A sleep this test can tell from any other on the host, confined (its pid is the
    // namespace's own) or not.
    const marker = `30.${process.pid}${Date.now() % 100000}`;
    const run = await sbx(['exec', '--', `echo started; exec sleep ${marker}`], {
      env: env(),
      signal: controller.signal,
      onStdout: (soFar) => {
        if (soFar.includes('started')) controller.abort();
      },
    });
    expect(run.code).toBe(ExitCode.INTERRUPTED);
    expect(await sleepersGone(marker)).toBe(true);
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
      sandboxOptions: { onCommand: (command) => ({ stdout: `ran: ${command}\n`, exitCode: 5 }) },
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

/** Whether no process runs `sleep <marker>` any more, waiting a bounded time for the kill to land. */
async function sleepersGone(marker: string): Promise<boolean> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const entries = await readdir('/proc').catch(() => [] as string[]);
    let found = false;
    for (const entry of entries) {
      if (!/^\d+$/.test(entry)) continue;
      const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
      if (cmdline.includes(`sleep\0${marker}`)) found = true;
    }
    if (!found) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}
