import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { ExitCode } from './exit-codes.js';
import { sbx } from './test-support.js';
import { CLI_VERSION } from './version.js';

describe('the sbx command line', () => {
  it('prints help with the exit statuses and exits 0', async () => {
    const run = await sbx(['--help']);
    expect(run.code).toBe(0);
    for (const command of ['demo', 'exec', 'tool', 'ls|ps', 'gc', 'config', 'doctor', 'mcp']) {
      expect(run.stdout).toContain(`  ${command} `);
    }
    expect(run.stdout).toContain('Exit status:');
  });

  it('prints the package version', async () => {
    const manifest = JSON.parse(
      await readFile(new URL('../package.json', import.meta.url), 'utf8'),
    ) as { version: string };
    expect(CLI_VERSION).toBe(manifest.version);
    expect(await sbx(['--version'])).toMatchObject({ code: 0, stdout: `${manifest.version}\n` });
  });

  it('exits 2 for an unknown command or option, and without a command', async () => {
    const unknown = await sbx(['frobnicate']);
    expect(unknown.code).toBe(ExitCode.USAGE);
    expect(unknown.stderr).toMatch(/unknown command 'frobnicate'/);
    expect((await sbx(['ls', '--bogus'])).code).toBe(ExitCode.USAGE);
    expect((await sbx([])).code).toBe(ExitCode.USAGE);
    expect((await sbx(['config', 'validate'])).code).toBe(ExitCode.USAGE);
  });

  it('documents every command with --json', async () => {
    for (const command of [
      ['demo'],
      ['exec'],
      ['tool'],
      ['ls'],
      ['gc'],
      ['config', 'validate'],
      ['doctor'],
      ['mcp'],
    ]) {
      const run = await sbx([...command, '--help']);
      expect(run.stdout, command.join(' ')).toContain('--json');
    }
  });
});
