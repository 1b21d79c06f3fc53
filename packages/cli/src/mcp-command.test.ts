import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExitCode } from './exit-codes.js';
import { sbx, tempDir } from './test-support.js';

describe('sbx mcp (command)', () => {
  let home: { dir: string; remove: () => Promise<void> };

  beforeEach(async () => {
    home = await tempDir('mcp-cmd');
  });
  afterEach(async () => {
    await home.remove();
  });

  it('ends with status 0 when stdin ends, having written nothing but protocol to stdout', async () => {
    const stdin = new PassThrough();
    const running = sbx(['mcp', '--thread', 't'], { env: { SBX_HOME: home.dir }, stdin });
    stdin.end();
    const run = await running;
    expect(run).toMatchObject({ code: 0, stdout: '' });
    expect(run.stderr).toMatch(/thread t\)\n$/);
  });

  it('--process-tools offers the yield mode and the process tools', async () => {
    const stdin = new PassThrough();
    const running = sbx(
      ['mcp', '--thread', 't', '--allow-host-bash', '--process-tools', '--json'],
      { env: { SBX_HOME: home.dir }, stdin },
    );
    stdin.end();
    const run = await running;
    expect(run.code).toBe(0);
    const banner = JSON.parse(bannerLine(run.stderr)) as { tools: string[] };
    expect(banner.tools).toEqual(
      expect.arrayContaining([
        'bash',
        'process_output',
        'process_write',
        'process_kill',
        'process_list',
      ]),
    );
    const plainIn = new PassThrough();
    const plain = sbx(['mcp', '--thread', 't', '--allow-host-bash', '--json'], {
      env: { SBX_HOME: home.dir },
      stdin: plainIn,
    });
    plainIn.end();
    const plainBanner = JSON.parse(bannerLine((await plain).stderr)) as {
      tools: string[];
    };
    expect(plainBanner.tools).not.toContain('process_list');
  });

  it('--help names the package for npx, and the thread default a session gets', async () => {
    const run = await sbx(['mcp', '--help']);
    expect(run.code).toBe(0);
    // A bare `npx sbx` outside an install runs an unrelated public package called sbx.
    expect(run.stdout).not.toMatch(/"args": \["sbx"/);
    expect(run.stdout).toContain('"args": ["-y", "-p", "@sbx/cli", "sbx", "mcp"]');
    expect(run.stdout).toMatch(
      /-t, --thread <id>\s+thread id of the sandbox \(default: a fresh id per\s+session\)/,
    );
    expect(run.stdout).toContain('--process-tools');
    const exec = await sbx(['exec', '--help']);
    expect(exec.stdout).toMatch(/-t, --thread <id>\s+thread id of the sandbox \(default: cli\)/);
  });

  it('stops before serving when the authorization file is invalid, stdout untouched', async () => {
    const authz = path.join(home.dir, 'authz.yaml');
    await writeFile(authz, 'authorization:\n  enabled: true\n  fail_open: true\n');
    const run = await sbx(['mcp', '--authz-config', authz], { env: { SBX_HOME: home.dir } });
    expect(run.code).toBe(ExitCode.FAILURE);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/authorization\.fail_open/);
  });

  it('stops before serving when the authorization provider cannot be built', async () => {
    const authz = path.join(home.dir, 'authz.yaml');
    await writeFile(
      authz,
      'authorization:\n  enabled: true\n  provider:\n    config:\n      roles:\n        admin: {}\n',
    );
    const run = await sbx(['mcp', '--authz-config', authz], { env: { SBX_HOME: home.dir } });
    expect(run.code).not.toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/'user' is not a defined role/);
  });

  it('warns that --role means nothing without an authorization config', async () => {
    const stdin = new PassThrough();
    const running = sbx(['mcp', '--role', 'guest'], { env: { SBX_HOME: home.dir }, stdin });
    stdin.end();
    const run = await running;
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/--role has no effect without an authorization config/);
  });
});

/**
 * The JSON banner among stderr's lines: with --allow-host-bash on a host that can confine, the
 * provider first warns that commands run unconfined.
 */
function bannerLine(stderr: string): string {
  return stderr.split('\n').find((line) => line.startsWith('{')) ?? '';
}
