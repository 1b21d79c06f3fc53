import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import {
  getToolDefinitions,
  parseSandboxConfig,
  silentLogger,
  type SandboxConfig,
} from '@sbx/core';
import { TOOL_NAMES } from '@sbx/core/internal';
import { parseAuthorizationConfig, type AuthorizationConfig } from '@sbx/authz';
import { LocalSandboxProvider } from '@sbx/local';
import { spawnSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Progress } from '@modelcontextprotocol/sdk/types.js';
import { Deferred, servicesRequired, track } from '@sbx/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  COMMAND_OUTPUT_SCHEMA,
  createSbxMcpServer,
  type SbxMcpServerOptions,
  type SbxMcpSession,
} from './mcp-server.js';
import { tempDir } from './test-support.js';

const WS = '/mnt/user-data/workspace';

const RBAC: AuthorizationConfig = parseAuthorizationConfig({
  enabled: true,
  default_role: 'user',
  provider: {
    config: {
      roles: {
        admin: { tools: { allow: '*' }, sandbox: { allow: '*' } },
        user: { tools: { allow: '*', deny: ['bash'] } },
        guest: { tools: { allow: ['read_file', 'ls'] }, sandbox: { allow: [] } },
      },
    },
  },
});

interface Connected {
  client: Client;
  session: SbxMcpSession;
  /** Every message the server sent, as it went out. */
  sent: unknown[];
}

function text(result: unknown): string {
  const content = (result as { content: { type: string; text: string }[] }).content;
  return content.map((c) => c.text).join('');
}

describe('sbx MCP server (in-memory transport, official SDK client)', () => {
  let home: { dir: string; remove: () => Promise<void> };
  let provider: LocalSandboxProvider;
  let config: SandboxConfig;
  const open: Connected[] = [];

  beforeEach(async () => {
    home = await tempDir('mcp');
    config = parseSandboxConfig({ base_dir: home.dir, allow_host_bash: true });
    provider = new LocalSandboxProvider({ config, logger: silentLogger });
  });
  afterEach(async () => {
    for (const { client, session } of open.splice(0)) {
      await client.close();
      await session.close();
    }
    await provider.shutdown();
    await home.remove();
  });

  async function connect(options: Partial<SbxMcpServerOptions> = {}): Promise<Connected> {
    const session = await createSbxMcpServer({
      provider,
      config,
      logger: silentLogger,
      ...options,
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const sent: unknown[] = [];
    const send = serverSide.send.bind(serverSide);
    serverSide.send = async (message, sendOptions) => {
      sent.push(message);
      await send(message, sendOptions);
    };
    const client = new Client({ name: 'sbx-test', version: '0.0.0' });
    await session.server.connect(serverSide);
    await client.connect(clientSide);
    const connected = { client, session, sent };
    open.push(connected);
    return connected;
  }

  it("lists the seven tools with core's descriptions and JSON schemas", async () => {
    const { client } = await connect();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual([...TOOL_NAMES]);
    const core = getToolDefinitions();
    for (const tool of tools) {
      const def = core.find((d) => d.name === tool.name);
      expect(tool.description).toBe(def?.description);
      expect(tool.inputSchema).toEqual(def?.inputSchema);
    }
    expect(tools.find((t) => t.name === 'read_file')?.annotations?.readOnlyHint).toBe(true);
    expect(tools.find((t) => t.name === 'bash')?.annotations?.readOnlyHint).toBe(false);
  });

  it('runs bash, write_file, read_file, grep and str_replace in one sandbox', async () => {
    const { client, session } = await connect();
    const call = async (name: string, args: Record<string, unknown>) =>
      client.callTool({ name, arguments: args });

    const write = await call('write_file', {
      path: `${WS}/app.py`,
      content: 'print("hi")  # TODO\n',
    });
    expect(write.isError).toBe(false);
    expect(text(write)).toBe('OK');

    const bash = await call('bash', { command: 'cat app.py && pwd' });
    expect(text(bash)).toBe(`print("hi")  # TODO\n${WS}\n`);

    const read = await call('read_file', { path: `${WS}/app.py` });
    expect(text(read)).toBe('print("hi")  # TODO\n');

    const grep = await call('grep', { pattern: 'todo', path: WS });
    expect(text(grep)).toContain(`${WS}/app.py:1: print("hi")  # TODO`);

    // The session carries the read marks: an edit after the read above goes through.
    const edit = await call('str_replace', { path: `${WS}/app.py`, old_str: 'hi', new_str: 'bye' });
    expect(text(edit)).toBe('OK');

    expect(session.context.state.sandboxId).toBe(`local:default:${session.threadId}`);
  });

  it('turns tool failures into isError results', async () => {
    const { client } = await connect();
    const result = await client.callTool({ name: 'read_file', arguments: { path: '/etc/passwd' } });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/^Error: /);
    const unknown = await client.callTool({ name: 'rm', arguments: {} });
    expect(unknown.isError).toBe(true);
    expect(text(unknown)).toMatch(/^Error: Unknown tool 'rm'/);
  });

  it('a successful call whose text starts with "Error:" is not an isError result', async () => {
    const { client } = await connect();
    const path = `${WS}/log.txt`;
    await client.callTool({ name: 'write_file', arguments: { path, content: 'Error: data\n' } });
    const read = await client.callTool({ name: 'read_file', arguments: { path } });
    expect(read.isError).toBe(false);
    expect(text(read)).toBe('Error: data\n');
  });

  it('bash decides by the exit status: "Error:" with 0 succeeds, `false` is an isError result', async () => {
    const { client } = await connect();
    const printed = await client.callTool({
      name: 'bash',
      arguments: { command: 'echo "Error: just text"' },
    });
    expect(printed.isError).toBe(false);
    expect(text(printed)).toBe('Error: just text\n');
    const failed = await client.callTool({ name: 'bash', arguments: { command: 'false' } });
    expect(failed.isError).toBe(true);
    expect(text(failed)).toBe('\nExit Code: 1');
  });

  it('offers the yield mode and the process tools when sandbox.tools.process_tools is on', async () => {
    const plain = await connect();
    expect((await plain.client.listTools()).tools.map((t) => t.name)).not.toContain('process_list');
    const withTools = parseSandboxConfig({
      base_dir: home.dir,
      allow_host_bash: true,
      tools: { process_tools: true },
    });
    const { client } = await connect({ config: withTools });
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['process_output', 'process_list']));
    const started = await client.callTool({
      name: 'bash',
      arguments: { command: 'echo up; sleep 30', yield_time_ms: 1_000 },
    });
    const id = /process_id="(p\d+)"/.exec(text(started))?.[1];
    expect(id).toBeDefined();
    const killed = await client.callTool({
      name: 'process_kill',
      arguments: { process_id: id, signal: 'SIGKILL' },
    });
    expect(text(killed)).toMatch(/SIGKILL\]$/);
  });

  it('gives every session its own thread unless one is named', async () => {
    const a = await connect();
    const b = await connect();
    expect(a.session.threadId).not.toBe(b.session.threadId);
    const named = await connect({ threadId: 'shared', userId: 'alice' });
    expect(named.session.threadId).toBe('shared');
    await named.client.callTool({
      name: 'write_file',
      arguments: { path: `${WS}/x`, content: 'x' },
    });
    expect(named.session.context.state.sandboxId).toBe('local:alice:shared');
  });

  it('does not offer bash on the host provider while host bash is off', async () => {
    const { client } = await connect({ allowHostBash: false });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES.filter((n) => n !== 'bash'));
    const refused = await client.callTool({ name: 'bash', arguments: { command: 'id' } });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/^Error: Tool 'bash' is not available in this session/);
  });

  it('offers bash without host bash when the host provider confines commands', async () => {
    const confinedHome = await tempDir('mcp-confined');
    const confinedConfig = parseSandboxConfig({ base_dir: confinedHome.dir });
    const confined = new LocalSandboxProvider({ config: confinedConfig, logger: silentLogger });
    try {
      if (!confined.confined) {
        if (servicesRequired()) throw new Error('bubblewrap confinement is required here');
        console.warn('skipped: bubblewrap cannot confine commands on this host');
        return;
      }
      const session = await createSbxMcpServer({
        provider: confined,
        config: confinedConfig,
        logger: silentLogger,
      });
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      const client = new Client({ name: 'sbx-test', version: '0.0.0' });
      await session.server.connect(serverSide);
      await client.connect(clientSide);
      try {
        const { tools } = await client.listTools();
        expect(tools.map((t) => t.name)).toContain('bash');
        const ran = await client.callTool({ name: 'bash', arguments: { command: 'pwd' } });
        expect(ran.isError).toBeFalsy();
        expect(text(ran)).toBe(`${WS}\n`);
      } finally {
        await client.close();
        await session.close();
      }
    } finally {
      await confined.shutdown();
      await confinedHome.remove();
    }
  });

  it('filters the tool list by role and denies sandbox use to a forbidden role', async () => {
    const guest = await connect({ authorization: RBAC, role: 'guest' });
    const { tools } = await guest.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['ls', 'read_file']);

    const denied = await guest.client.callTool({
      name: 'read_file',
      arguments: { path: `${WS}/notes.md` },
    });
    expect(denied.isError).toBe(true);
    expect(text(denied)).toBe(
      'Error: Sandbox execution is not permitted for your role (role=guest)',
    );
    expect(guest.session.context.state.sandboxId).toBeUndefined();

    const notOffered = await guest.client.callTool({
      name: 'write_file',
      arguments: { path: `${WS}/x`, content: 'x' },
    });
    expect(text(notOffered)).toMatch(/^Error: Tool 'write_file' is not available in this session/);
  });

  it('lets an allowed role work, and applies default_role without --role', async () => {
    const admin = await connect({ authorization: RBAC, role: 'admin' });
    expect((await admin.client.listTools()).tools).toHaveLength(7);
    const ok = await admin.client.callTool({ name: 'bash', arguments: { command: 'echo ok' } });
    expect(text(ok)).toBe('ok\n');

    const user = await connect({ authorization: RBAC });
    const names = (await user.client.listTools()).tools.map((t) => t.name);
    expect(names).not.toContain('bash');
    expect(names).toContain('write_file');
  });

  it('re-reads a config source on every decision', async () => {
    let current: AuthorizationConfig = RBAC;
    const { client } = await connect({ authorization: () => current, role: 'guest' });
    expect((await client.listTools()).tools).toHaveLength(2);
    current = parseAuthorizationConfig({ enabled: false });
    expect((await client.listTools()).tools).toHaveLength(7);
    const allowed = await client.callTool({ name: 'bash', arguments: { command: 'echo now' } });
    expect(text(allowed)).toBe('now\n');
  });

  it('declares an output schema on the command tools and returns it as structured content', async () => {
    const { client } = await connect({ processTools: true });
    const { tools } = await client.listTools();
    for (const name of ['bash', 'process_output', 'process_write', 'process_kill']) {
      expect(tools.find((t) => t.name === name)?.outputSchema, name).toEqual(COMMAND_OUTPUT_SCHEMA);
    }
    for (const name of ['read_file', 'write_file', 'ls', 'process_list']) {
      expect(tools.find((t) => t.name === name)?.outputSchema, name).toBeUndefined();
    }
    // The SDK client validates structured content against the tool's output schema.
    const ok = await client.callTool({
      name: 'bash',
      arguments: { command: 'echo hi; echo no >&2' },
    });
    expect(ok.structuredContent).toEqual({
      exitCode: 0,
      running: false,
      timedOut: false,
      stdout: 'hi\n',
      stderr: 'no\n',
      truncated: false,
    });
    const failed = await client.callTool({ name: 'bash', arguments: { command: 'exit 3' } });
    expect(failed).toMatchObject({ isError: true, structuredContent: { exitCode: 3 } });
    const started = await client.callTool({
      name: 'bash',
      arguments: { command: 'echo up; sleep 30', yield_time_ms: 1_000 },
    });
    const processId = (started.structuredContent as { processId?: string }).processId;
    expect(started.structuredContent).toMatchObject({ running: true, exitCode: null, processId });
    const killed = await client.callTool({
      name: 'process_kill',
      arguments: { process_id: processId, signal: 'SIGKILL' },
    });
    expect(killed.structuredContent).toMatchObject({
      running: false,
      exitCode: null,
      signal: 'SIGKILL',
      processId,
    });
    const read = await client.callTool({ name: 'ls', arguments: { path: WS } });
    expect(read.structuredContent).toBeUndefined();
  });

  it("streams a bash run's output as progress notifications before the command ends", async () => {
    const { client, session } = await connect({ userId: 'alice', threadId: 't-progress' });
    // The gate: a FIFO in the thread's workspace, which the command reads until the test writes.
    const workspace = provider.threadData('alice', session.threadId).workspacePath;
    if (workspace === undefined) throw new Error('the host provider names no workspace');
    await mkdir(workspace, { recursive: true });
    const made = spawnSync('mkfifo', [path.join(workspace, 'gate')]);
    expect(made.status).toBe(0);
    const progress: Progress[] = [];
    const first = new Deferred();
    const call = track(
      client.callTool(
        { name: 'bash', arguments: { command: 'echo first; read go < gate; echo "second $go"' } },
        undefined,
        {
          onprogress: (p) => {
            progress.push(p);
            first.resolve();
          },
        },
      ),
    );
    await first.promise;
    expect(call.settled).toBe(false);
    expect(progress).toEqual([{ progress: 6, message: 'first\n' }]);
    await writeFile(path.join(workspace, 'gate'), 'go\n');
    const result = await call.promise;
    expect(text(result)).toBe('first\nsecond go\n');
    expect(progress.map((p) => p.message).join('')).toBe('first\nsecond go\n');
    expect(progress.map((p) => p.progress)).toEqual([6, 16]);
  });

  it('sends no progress to a client that asked for none', async () => {
    const { client, sent } = await connect();
    const result = await client.callTool({ name: 'bash', arguments: { command: 'echo quiet' } });
    expect(text(result)).toBe('quiet\n');
    expect(sent.filter((m) => (m as { method?: string }).method !== undefined)).toEqual([]);
  });

  it('offers the process tools when asked, over a config that has them off', async () => {
    const { client } = await connect({ processTools: true });
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['process_output', 'process_list']));
    const listed = await client.callTool({ name: 'process_list', arguments: {} });
    expect(listed).toMatchObject({ isError: false });
    expect(text(listed)).toBe('(no processes)');
  });

  it('releases the sandbox when the session closes', async () => {
    const released: string[] = [];
    const original = provider.release.bind(provider);
    provider.release = async (id: string) => {
      released.push(id);
      await original(id);
    };
    const { client, session } = await connect({ threadId: 't-close' });
    await client.callTool({ name: 'ls', arguments: { path: WS } });
    await session.close();
    expect(released).toEqual(['local:default:t-close']);
  });
});
