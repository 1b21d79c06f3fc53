import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { InvalidArgumentError, SandboxAuthorizationError, silentLogger } from '@sbx/core';
import { LocalSandboxProvider } from '@sbx/local';
import { MemorySaver } from '@langchain/langgraph';
import { createDeepAgent } from 'deepagents';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SbxDeepAgentsBackend } from './deepagents-backend.js';
import { MAX_TRANSFER_FILES, downloadFiles, uploadFiles } from './deepagents-transfer.js';
import { ScriptedChatModel, type ScriptedCall } from './scripted-chat-model.test-support.js';

const W = '/mnt/user-data/workspace';
const FILE = `${W}/hello.py`;

describe('SbxDeepAgentsBackend under a real deep agent', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'sbx-deepagents-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true, logger: silentLogger });
  });
  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  async function run(
    script: ScriptedCall[][],
    backend = new SbxDeepAgentsBackend({ provider, threadId: 't1' }),
  ) {
    const model = new ScriptedChatModel(script);
    const agent = createDeepAgent({ model, backend });
    const state = await agent.invoke({ messages: [{ role: 'user', content: 'go' }] });
    const messages = state.messages as BaseMessage[];
    return messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m));
  }

  it('writes, reads, edits, lists, searches and runs a file in the sbx sandbox', async () => {
    const backend = new SbxDeepAgentsBackend({ provider, threadId: 't1' });
    const results = await run(
      [
        [{ tool: 'write_file', args: { file_path: FILE, content: 'print("hello")\n' } }],
        [{ tool: 'read_file', args: { file_path: FILE } }],
        [{ tool: 'edit_file', args: { file_path: FILE, old_string: 'hello', new_string: 'sbx' } }],
        [{ tool: 'ls', args: { path: W } }],
        [{ tool: 'glob', args: { pattern: '*.py', path: '/' } }],
        [{ tool: 'grep', args: { pattern: 'sbx', path: W } }],
        [{ tool: 'execute', args: { command: 'cat hello.py' } }],
      ],
      backend,
    );
    const text = results.map((m) => [m.name, m.text]);
    expect(text.map(([name]) => name)).toEqual([
      'write_file',
      'read_file',
      'edit_file',
      'ls',
      'glob',
      'grep',
      'execute',
    ]);
    expect(text[1]?.[1]).toContain('print("hello")');
    expect(text[3]?.[1]).toContain(FILE);
    expect(text[4]?.[1]).toContain(FILE);
    expect(text[5]?.[1]).toContain(FILE);
    expect(text[6]?.[1]).toContain('print("sbx")');
    // The sandbox really holds the edited file.
    const sandbox = provider.get(backend.context.state.sandboxId ?? '');
    expect(await sandbox?.readFile(FILE)).toBe('print("sbx")\n');
  });

  it('keeps sbx’s rules: host paths refused, read-before-write enforced, denials reported', async () => {
    const results = await run([
      [{ tool: 'read_file', args: { file_path: '/etc/passwd' } }],
      [{ tool: 'execute', args: { command: `printf 'v1\\n' > ${FILE}` } }],
      [{ tool: 'write_file', args: { file_path: FILE, content: 'overwritten\n' } }],
    ]);
    expect(results[0]?.text).toContain('Only paths under /mnt/user-data/');
    expect(results[2]?.text).toContain('write_file refused');
    const denied = await run(
      [[{ tool: 'ls', args: { path: W } }]],
      new SbxDeepAgentsBackend({
        provider,
        threadId: 't2',
        authorize: async () => {
          throw new SandboxAuthorizationError(undefined, 'guest');
        },
      }),
    );
    expect(denied[0]?.text).toBe(
      'Error listing files: Sandbox execution is not permitted for your role (role=guest)',
    );
  });
});

describe('SbxDeepAgentsBackend: execute’s exit code, uploads, downloads, yield', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'sbx-deepagents-exec-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true, logger: silentLogger });
  });
  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  async function run(script: ScriptedCall[][], backend: SbxDeepAgentsBackend) {
    const agent = createDeepAgent({ model: new ScriptedChatModel(script), backend });
    const state = await agent.invoke({ messages: [{ role: 'user', content: 'go' }] });
    const messages = state.messages as BaseMessage[];
    return messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m)).map((m) => m.text);
  }

  it('a deep agent sees the exit status deepagents’ way: [Command failed with exit code 3]', async () => {
    const backend = new SbxDeepAgentsBackend({ provider, threadId: 'x1' });
    const [failed, succeeded] = await run(
      [
        [{ tool: 'execute', args: { command: 'echo oops; exit 3' } }],
        [{ tool: 'execute', args: { command: 'echo fine' } }],
      ],
      backend,
    );
    expect(failed).toBe('oops\n\n[Command failed with exit code 3]');
    expect(succeeded).toBe('fine\n\n[Command succeeded with exit code 0]');
    expect(await backend.execute('exit 7')).toEqual({ output: '', exitCode: 7, truncated: false });
    // Output that merely looks like sbx's status line is left as it is.
    expect(await backend.execute('echo "Exit Code: 9"')).toEqual({
      output: 'Exit Code: 9\n',
      exitCode: 0,
      truncated: false,
    });
  });

  it('truncated output is flagged, and deepagents says so', async () => {
    const backend = new SbxDeepAgentsBackend({
      provider,
      threadId: 'x2',
      config: { bashOutputMaxChars: 200 },
    });
    const [text] = await run([[{ tool: 'execute', args: { command: 'seq 1 2000' } }]], backend);
    expect(text).toMatch(/\[Output was truncated due to size limits\]$/);
    expect((await backend.execute('seq 1 2000')).truncated).toBe(true);
  });

  it('uploads and downloads bytes as they are, with deepagents’ error codes', async () => {
    const backend = new SbxDeepAgentsBackend({ provider, threadId: 'x3' });
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    expect(await backend.uploadFiles([[`${W}/all.bin`, bytes]])).toEqual([
      { path: `${W}/all.bin`, error: null },
    ]);
    await backend.execute('mkdir -p sub');
    const downloaded = await backend.downloadFiles([
      `${W}/all.bin`,
      `${W}/missing.bin`,
      `${W}/sub`,
      '/etc/passwd',
    ]);
    expect(downloaded[0]).toEqual({ path: `${W}/all.bin`, content: bytes, error: null });
    expect(downloaded.slice(1).map((r) => [r.path, r.content, r.error])).toEqual([
      [`${W}/missing.bin`, null, 'file_not_found'],
      [`${W}/sub`, null, 'is_directory'],
      ['/etc/passwd', null, 'permission_denied'],
    ]);
    expect(await backend.uploadFiles([['/etc/sbx-upload-test', bytes]])).toEqual([
      { path: '/etc/sbx-upload-test', error: 'permission_denied' },
    ]);
    const nul = [W, '/a', String.fromCharCode(0), 'b'].join('');
    expect(await backend.uploadFiles([[nul, bytes]])).toEqual([
      { path: nul, error: 'invalid_path' },
    ]);
  });

  it('a deep agent’s memory (AGENTS.md) is read through downloadFiles', async () => {
    const backend = new SbxDeepAgentsBackend({ provider, threadId: 'x4' });
    const memory = `${W}/AGENTS.md`;
    await backend.uploadFiles([[memory, new TextEncoder().encode('Always answer in haiku.\n')]]);
    const model = new ScriptedChatModel([]);
    const agent = createDeepAgent({ model, backend, memory: [memory] });
    await agent.invoke({ messages: [{ role: 'user', content: 'go' }] });
    expect(JSON.stringify(model.prompts[0])).toContain('Always answer in haiku.');
  });

  it('bounds a transfer before moving anything: file count and bytes', async () => {
    const backend = new SbxDeepAgentsBackend({ provider, threadId: 'x5' });
    const one = new Uint8Array(1);
    const tooMany = Array.from(
      { length: MAX_TRANSFER_FILES + 1 },
      (_, i) => [`${W}/f${i}`, one] as [string, Uint8Array],
    );
    await expect(backend.uploadFiles(tooMany)).rejects.toThrow(InvalidArgumentError);
    await expect(backend.downloadFiles(tooMany.map(([path]) => path))).rejects.toThrow(
      InvalidArgumentError,
    );
    // A hostile array claiming 300 MiB (no such memory is allocated): refused before any write.
    const claimed = new Uint8Array(4);
    Object.defineProperty(claimed, 'byteLength', { value: 300 * 1024 * 1024 });
    await expect(backend.uploadFiles([[`${W}/big.bin`, claimed]])).rejects.toThrow(
      /bytes in one call/,
    );
    expect((await backend.downloadFiles([`${W}/big.bin`, `${W}/f0`]))[0]?.error).toBe(
      'file_not_found',
    );
    // Downloads stop once the bytes read pass the bound, returning nothing.
    await backend.uploadFiles([
      [`${W}/a`, new Uint8Array(8)],
      [`${W}/b`, new Uint8Array(8)],
    ]);
    const limits = { files: 10, bytes: 12 };
    await expect(downloadFiles(backend.context, [`${W}/a`, `${W}/b`], limits)).rejects.toThrow(
      /more than 12 bytes/,
    );
    await expect(
      uploadFiles(backend.context, [[`${W}/c`, new Uint8Array(13)]], limits),
    ).rejects.toThrow(/13 bytes/);
  });

  it('executeYieldMs leaves a long command running and returns its process id, exit code null', async () => {
    expect(
      () => new SbxDeepAgentsBackend({ provider, threadId: 'x6', executeYieldMs: 300 }),
    ).toThrow(/processTools/);
    expect(
      () =>
        new SbxDeepAgentsBackend({
          provider,
          threadId: 'x6',
          executeYieldMs: -1,
          config: { processTools: true },
        }),
    ).toThrow(InvalidArgumentError);
    const backend = new SbxDeepAgentsBackend({
      provider,
      threadId: 'x6',
      executeYieldMs: 300,
      config: { processTools: true },
    });
    const started = await backend.execute('echo ready; read line; echo "got:$line"');
    expect(started.exitCode).toBeNull();
    expect(started.output).toMatch(/ready[\s\S]*process_id="p\d+"/);
    const done = await backend.execute('echo quick; exit 4');
    expect(done).toMatchObject({ exitCode: 4 });
    expect(done.output).toBe('quick\n');
  });
});

describe('SbxDeepAgentsBackend: one deep agent, many threads', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'sbx-deepagents-threads-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true, logger: silentLogger });
  });
  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  it('serves two threads at once, each operation in its run’s thread', async () => {
    const MINE = `${W}/mine.txt`;
    const model = new ScriptedChatModel(
      [
        (messages) => [
          {
            tool: 'write_file',
            args: {
              file_path: MINE,
              content: messages.find((m) => HumanMessage.isInstance(m))!.text,
            },
          },
        ],
        [{ tool: 'execute', args: { command: 'ls; cat mine.txt' } }],
        [{ tool: 'read_file', args: { file_path: MINE } }],
      ],
      { perConversation: true },
    );
    const backend = new SbxDeepAgentsBackend({ provider, userId: 'alice', threadId: 'unused' });
    const agent = createDeepAgent({ model, backend, checkpointer: new MemorySaver() });
    const converse = async (threadId: string) => {
      const state = await agent.invoke(
        { messages: [{ role: 'user', content: threadId }] },
        { configurable: { thread_id: threadId } },
      );
      const messages = state.messages as BaseMessage[];
      return messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m)).map((m) => m.text);
    };
    const [a, b] = await Promise.all([converse('thread-a'), converse('thread-b')]);
    expect(a[1]).toContain('mine.txt\nthread-a');
    expect(a[2]).toContain('thread-a');
    expect(b[1]).toContain('mine.txt\nthread-b');
    expect(b[2]).toContain('thread-b');
    expect(a.join('\n')).not.toContain('thread-b');
    expect(b.join('\n')).not.toContain('thread-a');
    const unused = provider.get(await provider.acquire({ threadId: 'unused', userId: 'alice' }));
    expect(await unused?.listDir(W, { maxDepth: 1 })).toEqual([]);
  });
});

describe('SbxDeepAgentsBackend with hostile arguments', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'sbx-deepagents-hostile-'));
    provider = new LocalSandboxProvider({ baseDir, logger: silentLogger });
  });
  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  it('refuses over-long and NUL paths, over-long patterns, and caps a read', async () => {
    const backend = new SbxDeepAgentsBackend({ provider, threadId: 'h' });
    expect((await backend.ls(`${W}/a\0b`)).error).toMatch(/NUL/);
    expect((await backend.read(`${W}/${'x'.repeat(5000)}`)).error).toMatch(/at most 4096/);
    expect((await backend.grep('a'.repeat(5000), W)).error).toBe(
      'Error: pattern must be at most 4096 characters',
    );
    expect((await backend.glob('*'.repeat(5000), W)).error).toMatch(/at most \d+ characters/);
    const lines = Array.from({ length: 20_005 }, () => 'x').join('\n');
    expect((await backend.write(`${W}/big.txt`, lines)).error).toBeUndefined();
    const page = await backend.read(`${W}/big.txt`, 0, Number.MAX_SAFE_INTEGER);
    expect(String(page.content).split('\n')).toHaveLength(10_000);
    // Still the sandbox's rules: host paths are refused.
    expect((await backend.read('/etc/passwd')).error).toContain('Only paths under');
  });
});

describe('SbxDeepAgentsBackend streams execute’s output', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'sbx-deepagents-stream-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true, logger: silentLogger });
  });
  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  // Waits (bounded) for a file the test writes only once it saw the first line.
  const GATED =
    'echo first; for i in $(seq 400); do [ -f go ] && break; sleep 0.05; done; echo second';

  it('a deep agent’s streamEvents get execute’s first line before the tool ends', async () => {
    const backend = new SbxDeepAgentsBackend({ provider, threadId: 'ds1' });
    const model = new ScriptedChatModel([[{ tool: 'execute', args: { command: GATED } }]]);
    const agent = createDeepAgent({ model, backend });
    const seen: string[] = [];
    const events = agent.streamEvents(
      { messages: [{ role: 'user', content: 'go' }] },
      { version: 'v2' },
    );
    for await (const event of events) {
      if (event.event === 'on_custom_event' && event.name === 'sbx_tool_output') {
        const data = event.data as { tool: string; text: string };
        expect(data).toMatchObject({ type: 'sbx_tool_output', tool: 'execute', stream: 'stdout' });
        seen.push(`custom:${data.text}`);
        if (data.text === 'first\n') {
          const sandbox = provider.get(await provider.acquire({ threadId: 'ds1' }));
          await sandbox?.writeFile(`${W}/go`, '');
        }
      } else if (event.event === 'on_tool_end' && event.name === 'execute') {
        seen.push('tool-end');
      }
    }
    expect(seen).toEqual(['custom:first\n', 'custom:second\n', 'tool-end']);
  });

  it('called outside a run, execute streams to no one and still answers', async () => {
    const backend = new SbxDeepAgentsBackend({ provider, threadId: 'ds2' });
    expect(await backend.execute('echo plain')).toEqual({
      output: 'plain\n',
      exitCode: 0,
      truncated: false,
    });
  });
});
