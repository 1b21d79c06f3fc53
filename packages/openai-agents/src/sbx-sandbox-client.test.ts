import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '@openai/agents';
import { Manifest, SandboxAgent } from '@openai/agents/sandbox';
import { InvalidArgumentError, silentLogger, type SandboxProvider } from '@sbx/core';
import { LocalSandboxProvider } from '@sbx/local';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SbxSandboxClient } from './sbx-sandbox-client.js';
import { SBX_WORKSPACE_ROOT } from './sbx-sandbox-session.js';
import { ScriptedModel } from './scripted-model.test-support.js';

type Item = { type: string; rawItem: unknown };

/** The text each tool call returned, in order. */
function toolOutputs(items: readonly Item[]): [string, string][] {
  return items
    .filter((i) => i.type === 'tool_call_output_item')
    .map((i) => {
      const raw = i.rawItem as { type?: string; name?: string; output?: unknown };
      const output = raw.output as { text?: string } | string | undefined;
      const name = raw.type === 'apply_patch_call_output' ? 'apply_patch' : (raw.name ?? '');
      return [name, typeof output === 'string' ? output : (output?.text ?? '')];
    });
}

/** A SandboxAgent run through the sbx client: shell, then file edits with apply_patch. */
async function shellAndEdits(provider: SandboxProvider, threadId: string) {
  const model = new ScriptedModel([
    [{ tool: 'exec_command', args: { cmd: 'echo hi from $(pwd); exit 3' } }],
    [
      {
        tool: 'apply_patch',
        args: { type: 'create_file', path: 'hello.py', diff: '+print("hello")\n' },
      },
    ],
    [
      {
        tool: 'apply_patch',
        args: {
          type: 'update_file',
          path: 'hello.py',
          diff: '@@\n-print("hello")\n+print("sbx")\n',
        },
      },
    ],
    [{ tool: 'exec_command', args: { cmd: 'cat hello.py' } }],
  ]);
  const agent = new SandboxAgent({ name: 'coder', instructions: 'work', model });
  const client = new SbxSandboxClient({ provider, userId: 'alice', threadId });
  const result = await run(agent, 'go', { maxTurns: 10, sandbox: { client } });
  return { result, outputs: toolOutputs(result.newItems as readonly Item[]), model };
}

describe('SbxSandboxClient behind a real SandboxAgent (local provider)', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'sbx-agents-client-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true, logger: silentLogger });
  });
  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  it('runs shell commands and file edits in the thread’s sbx sandbox', async () => {
    const { result, outputs, model } = await shellAndEdits(provider, 'agents-1');
    expect(outputs).toEqual([
      ['exec_command', `hi from ${SBX_WORKSPACE_ROOT}\n\nExit Code: 3`],
      ['apply_patch', `Wrote ${SBX_WORKSPACE_ROOT}/hello.py`],
      ['apply_patch', `Wrote ${SBX_WORKSPACE_ROOT}/hello.py`],
      ['exec_command', 'print("sbx")'],
    ]);
    expect(result.finalOutput).toBe('done');
    // The model was offered the capabilities' tools.
    expect(model.requests[0]?.tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['exec_command', 'apply_patch']),
    );
    const sandbox = provider.get(await provider.acquire({ threadId: 'agents-1', userId: 'alice' }));
    expect(await sandbox?.readFile(`${SBX_WORKSPACE_ROOT}/hello.py`)).toBe('print("sbx")');
  });

  it('keeps sbx’s rules: a host path is refused, an unread file is not overwritten', async () => {
    const model = new ScriptedModel([
      [{ tool: 'exec_command', args: { cmd: 'printf v1 > seen.txt' } }],
      [
        {
          tool: 'apply_patch',
          args: { type: 'create_file', path: '/etc/sbx-agents-test', diff: '+x\n' },
        },
      ],
      [{ tool: 'apply_patch', args: { type: 'create_file', path: 'seen.txt', diff: '+v2\n' } }],
      [{ tool: 'exec_command', args: { cmd: 'ls', workdir: '/tmp' } }],
    ]);
    const agent = new SandboxAgent({ name: 'coder', instructions: 'work', model });
    const client = new SbxSandboxClient({ provider, threadId: 'agents-2' });
    const result = await run(agent, 'go', { maxTurns: 10, sandbox: { client } });
    const outputs = toolOutputs(result.newItems as readonly Item[]);
    expect(outputs[1]?.[1]).toMatch(/^Error: Only paths under \/mnt\/user-data\//);
    expect(outputs[2]?.[1]).toMatch(/^Error: .*write_file refused/);
    expect(outputs[3]?.[1]).toMatch(/workdir \/tmp is not supported/);
  });

  it('each run’s options.threadId picks its thread’s sandbox; a bad id is refused', async () => {
    const client = new SbxSandboxClient({ provider, threadId: 'default' });
    const a = await client.create({ options: { threadId: 'thread-a' } });
    const b = await client.create({ options: { threadId: 'thread-b' } });
    await a.execCommand({ cmd: 'printf a > mine.txt' });
    await b.execCommand({ cmd: 'printf b > mine.txt' });
    expect(await a.readFile({ path: 'mine.txt' })).toBe('a');
    expect(await b.readFile({ path: 'mine.txt' })).toBe('b');
    await expect(client.create({ options: { threadId: ['.', '.'].join('') } })).rejects.toThrow(
      InvalidArgumentError,
    );
  });

  it('refuses what it does not support instead of ignoring it', async () => {
    const client = new SbxSandboxClient({ provider, threadId: 'x' });
    const manifest = new Manifest({ entries: { 'a.txt': { type: 'file', content: 'x' } } });
    await expect(client.create({ manifest })).rejects.toThrow(/manifest entries/);
  });
});
