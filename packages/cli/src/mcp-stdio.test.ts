// The built `sbx` executable as an MCP host runs it: a child process spoken to over stdin/stdout by
// the SDK's own stdio client. Needs `npm run build` first (the repository's test command builds
// before it tests); without a build it is skipped locally and fails in CI.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { servicesRequired } from '@sbx/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TOOL_NAMES } from '@sbx/core/internal';
import { tempDir } from './test-support.js';

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const built = existsSync(BIN);
if (!built && servicesRequired()) {
  throw new Error(`${BIN} is missing: run npm run build before the tests`);
}
if (!built) console.warn(`[skip] sbx mcp over stdio: ${BIN} is not built (npm run build)`);

/** `sbx mcp` as a child, once its banner says it listens: its stdin, stderr so far and exit. */
async function startMcp(home: string) {
  const child = spawn(process.execPath, [BIN, 'mcp'], {
    env: { PATH: process.env.PATH ?? '', SBX_HOME: home },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const output = { stderr: '' };
  child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('exit', (c, s) => resolve([c, s])),
  );
  // Wait for the banner so the server is listening before its input ends.
  await new Promise<void>((resolve) => child.stderr.once('data', () => resolve()));
  return { child, output, exited };
}

const WS = '/mnt/user-data/workspace';

function text(result: unknown): string {
  return (result as { content: { text: string }[] }).content.map((c) => c.text).join('');
}

describe.skipIf(!built)('sbx mcp over stdio (built executable)', () => {
  let home: { dir: string; remove: () => Promise<void> };

  beforeEach(async () => {
    home = await tempDir('mcp-stdio');
  });
  afterEach(async () => {
    await home.remove();
  });

  it('serves the tools to the SDK client, with a denial for a forbidden role', async () => {
    const authz = path.join(home.dir, 'authz.yaml');
    await writeFile(
      authz,
      [
        'authorization:',
        '  enabled: true',
        '  default_role: guest',
        '  provider:',
        '    config:',
        '      roles:',
        '        admin: { tools: { allow: "*" }, sandbox: { allow: "*" } }',
        '        guest: { tools: { allow: [read_file] }, sandbox: { allow: [] } }',
        '',
      ].join('\n'),
    );
    const env = { PATH: process.env.PATH ?? '', SBX_HOME: home.dir };
    const connect = async (args: string[]) => {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [BIN, 'mcp', '--authz-config', authz, ...args],
        env,
        cwd: home.dir,
        stderr: 'pipe',
      });
      const client = new Client({ name: 'sbx-stdio-test', version: '0.0.0' });
      await client.connect(transport);
      return client;
    };

    const admin = await connect(['--role', 'admin', '--thread', 'stdio', '--allow-host-bash']);
    try {
      const { tools } = await admin.listTools();
      expect(tools.map((t) => t.name)).toEqual([...TOOL_NAMES]);
      const write = await admin.callTool({
        name: 'write_file',
        arguments: { path: `${WS}/hello.txt`, content: 'hello over stdio\n' },
      });
      expect(text(write)).toBe('OK');
      const read = await admin.callTool({
        name: 'read_file',
        arguments: { path: `${WS}/hello.txt` },
      });
      expect(text(read)).toBe('hello over stdio\n');
      const bash = await admin.callTool({
        name: 'bash',
        arguments: { command: 'wc -l < hello.txt' },
      });
      expect(text(bash).trim()).toBe('1');
      const grep = await admin.callTool({
        name: 'grep',
        arguments: { pattern: 'stdio', path: WS },
      });
      expect(text(grep)).toContain(`${WS}/hello.txt:1: hello over stdio`);
    } finally {
      await admin.close();
    }
    const onDisk = path.join(home.dir, 'users/default/threads/stdio/user-data/workspace/hello.txt');
    expect(await readFile(onDisk, 'utf8')).toBe('hello over stdio\n');

    const guest = await connect(['--role', 'guest', '--thread', 'stdio']);
    try {
      expect((await guest.listTools()).tools.map((t) => t.name)).toEqual(['read_file']);
      const denied = await guest.callTool({
        name: 'read_file',
        arguments: { path: `${WS}/hello.txt` },
      });
      expect(denied.isError).toBe(true);
      expect(text(denied)).toBe(
        'Error: Sandbox execution is not permitted for your role (role=guest)',
      );
    } finally {
      await guest.close();
    }
  });

  it('exits 0 by itself when the client closes its end of stdin', async () => {
    const { child, output, exited } = await startMcp(home.dir);
    child.stdin.end();
    const [code, signal] = await exited;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(output.stderr).toMatch(
      // bash too where the host confines commands, which need no host bash then.
      /^sbx mcp: serving (bash, )?ls, glob, grep, read_file, write_file, str_replace over stdio/,
    );
  });

  it('a message over the 10 MiB transport limit ends the server with a failure and a reason', async () => {
    const { child, output, exited } = await startMcp(home.dir);
    child.stdin.on('error', () => undefined);
    child.stdin.write('x'.repeat(11 * 1024 * 1024));
    const [code] = await exited;
    expect(code).toBe(1);
    expect(output.stderr).toMatch(
      /sbx mcp: stopped: ReadBuffer exceeded maximum size of 10485760 bytes/,
    );
  });
});
