import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '@openai/agents';
import {
  SandboxAgent,
  SandboxExposedPortUnavailableError,
  SandboxPtyError,
  SandboxUnsupportedFeatureError,
} from '@openai/agents/sandbox';
import { silentLogger } from '@sbx/core';
import { MemorySandboxProvider } from '@sbx/core/testing';
import { LocalSandboxProvider } from '@sbx/local';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SbxSandboxClient } from './sbx-sandbox-client.js';
import { SBX_WORKSPACE_ROOT } from './sbx-sandbox-session.js';
import { ScriptedModel, type ScriptedStep } from './scripted-model.test-support.js';
import { MAX_VIEW_IMAGE_BYTES } from './view-image.js';

type Item = { type: string; rawItem: unknown };

/** What each tool call returned, in order: its name and its text (or its output as JSON). */
function toolOutputs(items: readonly Item[]): [string, string][] {
  return items
    .filter((i) => i.type === 'tool_call_output_item')
    .map((i) => {
      const raw = i.rawItem as { type?: string; name?: string; output?: unknown };
      const output = raw.output as { type?: string; text?: string } | string | undefined;
      const name = raw.type === 'apply_patch_call_output' ? 'apply_patch' : (raw.name ?? '');
      const text =
        typeof output === 'string'
          ? output
          : output?.type === 'text' || output?.text !== undefined
            ? (output?.text ?? '')
            : JSON.stringify(output);
      return [name, text];
    });
}

/** The session id the last exec_command answer named. */
const sessionIn = (request: { input: unknown }): number =>
  Number(/session ID (\d+)/.exec(JSON.stringify(request.input))?.[1] ?? -1);

// A 1×1 PNG, decoded at run time.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'base64',
);

describe('SbxSandboxClient capabilities behind a real SandboxAgent', () => {
  let baseDir: string;
  let provider: LocalSandboxProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'sbx-agents-caps-'));
    provider = new LocalSandboxProvider({ baseDir, allowHostBash: true, logger: silentLogger });
  });
  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  async function agentRun(
    script: ScriptedStep[],
    threadId: string,
    config: Record<string, unknown> = {},
  ) {
    const model = new ScriptedModel(script);
    const agent = new SandboxAgent({ name: 'coder', instructions: 'work', model });
    const client = new SbxSandboxClient({ provider, threadId, config });
    const result = await run(agent, 'go', { maxTurns: 12, sandbox: { client } });
    return { model, outputs: toolOutputs(result.newItems as readonly Item[]) };
  }

  async function sandboxOf(threadId: string) {
    const sandbox = provider.get(await provider.acquire({ threadId }));
    if (!sandbox) throw new Error('no sandbox');
    return sandbox;
  }

  it('with the process tools, a yielded command is fed, polled and interrupted with write_stdin', async () => {
    const { model, outputs } = await agentRun(
      [
        [
          {
            tool: 'exec_command',
            args: {
              cmd: 'echo ready; while read l; do echo "got:$l"; done',
              yield_time_ms: 300,
            },
          },
        ],
        (request) => [
          {
            tool: 'write_stdin',
            args: { session_id: sessionIn(request), chars: 'ping\n', yield_time_ms: 5_000 },
          },
        ],
        (request) => [
          { tool: 'write_stdin', args: { session_id: sessionIn(request), chars: '\u0003' } },
        ],
      ],
      'stdin-1',
      { processTools: true },
    );
    expect(model.requests[0]?.tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['exec_command', 'write_stdin']),
    );
    expect(outputs.map(([name]) => name)).toEqual(['exec_command', 'write_stdin', 'write_stdin']);
    expect(outputs[0]?.[1]).toMatch(/Process running with session ID \d+\nOutput:\nready/);
    expect(outputs[1]?.[1]).toMatch(/Process running with session ID \d+[\s\S]*got:ping/);
    expect(outputs[2]?.[1]).not.toMatch(/Process running/);
  });

  it('a session id that is not a whole number is refused before it names a process', async () => {
    const client = new SbxSandboxClient({
      provider,
      threadId: 'stdin-3',
      config: { processTools: true },
    });
    const session = await client.create();
    for (const sessionId of [-1, 1.5, Number.NaN, Number.MAX_SAFE_INTEGER + 2]) {
      await expect(session.writeStdin({ sessionId, chars: '' })).rejects.toThrow(
        /session_id must be a non-negative integer/,
      );
    }
  });

  it('a yield past sbx’s bound is held to it, not refused: the command still runs', async () => {
    const client = new SbxSandboxClient({
      provider,
      threadId: 'stdin-4',
      config: { processTools: true },
    });
    const session = await client.create();
    const text = await session.execCommand({ cmd: 'echo quick', yieldTimeMs: 1e12 });
    expect(text).toMatch(/Process exited with code 0\nOutput:\nquick\n$/);
  });

  it('without the process tools write_stdin is not offered, and a direct call is a PtyError', async () => {
    const { model } = await agentRun([], 'stdin-2');
    expect(model.requests[0]?.tools.map((t) => t.name)).not.toContain('write_stdin');
    const session = await new SbxSandboxClient({ provider, threadId: 'stdin-2' }).create();
    await expect(session.writeStdin({ sessionId: 1, chars: 'x' })).rejects.toBeInstanceOf(
      SandboxPtyError,
    );
  });

  it('tty, another shell and run_as are refused, to the model and to a direct exec()', async () => {
    const { outputs } = await agentRun(
      [
        [{ tool: 'exec_command', args: { cmd: 'echo hi', tty: true } }],
        [{ tool: 'exec_command', args: { cmd: 'echo hi', shell: '/bin/zsh' } }],
      ],
      'tty-1',
    );
    expect(outputs[0]?.[1]).toMatch(/^Error: tty is not supported/);
    expect(outputs[1]?.[1]).toMatch(/^Error: shell is not supported/);
    const session = await new SbxSandboxClient({ provider, threadId: 'tty-1' }).create();
    await expect(session.exec({ cmd: 'true', tty: true })).rejects.toBeInstanceOf(SandboxPtyError);
    await expect(session.exec({ cmd: 'true', runAs: 'root' })).rejects.toBeInstanceOf(
      SandboxUnsupportedFeatureError,
    );
  });

  it('view_image returns a PNG as the SDK’s image output; a non-image and an oversized file are refused', async () => {
    const sandbox = await sandboxOf('img-1');
    await sandbox.updateFile(`${SBX_WORKSPACE_ROOT}/dot.png`, PNG);
    await sandbox.writeFile(`${SBX_WORKSPACE_ROOT}/notes.txt`, 'not an image');
    // Built at run time: a file one byte over the bound, starting like a PNG.
    const big = Buffer.alloc(MAX_VIEW_IMAGE_BYTES + 1);
    PNG.copy(big);
    await sandbox.updateFile(`${SBX_WORKSPACE_ROOT}/big.png`, big);
    const session = await new SbxSandboxClient({ provider, threadId: 'img-1' }).create();
    const image = await session.viewImage({ path: 'dot.png' });
    expect(image).toMatchObject({ type: 'image', image: { mediaType: 'image/png' } });
    const data = (image as { image: { data: Uint8Array } }).image.data;
    expect(Buffer.from(data).equals(PNG)).toBe(true);
    await expect(session.viewImage({ path: 'notes.txt' })).rejects.toThrow(/not a supported image/);
    await expect(session.viewImage({ path: 'big.png' })).rejects.toThrow(/exceeds the 10 MB limit/);
    await expect(session.viewImage({ path: '/etc/passwd' })).rejects.toThrow(/Only paths under/);
    // Through the agent: the model gets the image (not an error text).
    const { outputs } = await agentRun(
      [[{ tool: 'view_image', args: { path: 'dot.png' } }]],
      'img-1',
    );
    expect(outputs[0]?.[0]).toBe('view_image');
    expect(outputs[0]?.[1]).not.toMatch(/unable to read|not found|error/i);
  });

  it('apply_patch moves and deletes files in the workspace, and refuses to leave it', async () => {
    const sandbox = await sandboxOf('patch-1');
    await sandbox.writeFile(`${SBX_WORKSPACE_ROOT}/a.txt`, 'one\n');
    await sandbox.writeFile(`${SBX_WORKSPACE_ROOT}/gone.txt`, 'x\n');
    const { outputs } = await agentRun(
      [
        [
          {
            tool: 'apply_patch',
            args: {
              type: 'update_file',
              path: 'a.txt',
              moveTo: 'sub/b.txt',
              diff: '@@\n-one\n+two\n',
            },
          },
        ],
        [{ tool: 'apply_patch', args: { type: 'delete_file', path: 'gone.txt' } }],
        [{ tool: 'apply_patch', args: { type: 'delete_file', path: 'gone.txt' } }],
        [{ tool: 'apply_patch', args: { type: 'delete_file', path: '../../../../etc/hostname' } }],
        [{ tool: 'exec_command', args: { cmd: 'ls -R; cat sub/b.txt' } }],
      ],
      'patch-1',
    );
    expect(outputs[0]?.[1]).toBe(
      `Moved ${SBX_WORKSPACE_ROOT}/a.txt to ${SBX_WORKSPACE_ROOT}/sub/b.txt`,
    );
    expect(outputs[1]?.[1]).toBe(`Deleted ${SBX_WORKSPACE_ROOT}/gone.txt`);
    expect(outputs[2]?.[1]).toMatch(/^Error: cannot delete .*gone\.txt/);
    expect(outputs[3]?.[1]).toMatch(/^Error: /);
    expect(outputs[4]?.[1]).not.toMatch(/a\.txt|gone\.txt/);
    expect(outputs[4]?.[1]).toMatch(/b\.txt[\s\S]*two/);
  });

  it('a hostile file name is deleted as a name, never run as part of a command', async () => {
    const sandbox = await sandboxOf('patch-3');
    // Built at run time: a name that closes a quoted path and runs a command of its own.
    const name = ['x', '"; touch pwned; echo "', '.txt'].join('');
    await sandbox.writeFile(`${SBX_WORKSPACE_ROOT}/${name}`, 'x');
    const { outputs } = await agentRun(
      [
        [{ tool: 'apply_patch', args: { type: 'delete_file', path: name } }],
        [{ tool: 'exec_command', args: { cmd: 'ls -A' } }],
      ],
      'patch-3',
    );
    expect(outputs[0]?.[1]).toBe(`Deleted ${SBX_WORKSPACE_ROOT}/${name}`);
    expect(outputs[1]?.[1]).not.toMatch(/pwned|x"/);
  });

  it('a move onto an existing file the agent never read is refused, and the source stays', async () => {
    const sandbox = await sandboxOf('patch-2');
    await sandbox.writeFile(`${SBX_WORKSPACE_ROOT}/a.txt`, 'one\n');
    await sandbox.writeFile(`${SBX_WORKSPACE_ROOT}/b.txt`, 'precious\n');
    const { outputs } = await agentRun(
      [
        [
          {
            tool: 'apply_patch',
            args: { type: 'update_file', path: 'a.txt', moveTo: 'b.txt', diff: '@@\n-one\n+two\n' },
          },
        ],
      ],
      'patch-2',
    );
    expect(outputs[0]?.[1]).toMatch(/^Error: .*write_file refused/);
    expect(await sandbox.readFile(`${SBX_WORKSPACE_ROOT}/a.txt`)).toBe('one\n');
    expect(await sandbox.readFile(`${SBX_WORKSPACE_ROOT}/b.txt`)).toBe('precious\n');
  });

  it('an exposed port is refused with the SDK’s ExposedPortUnavailableError', async () => {
    const session = await new SbxSandboxClient({ provider, threadId: 'port-1' }).create();
    await expect(session.resolveExposedPort(8080)).rejects.toBeInstanceOf(
      SandboxExposedPortUnavailableError,
    );
  });

  it('persists a workspace and hydrates it into another thread’s empty workspace', async () => {
    const source = await sandboxOf('persist-a');
    await source.writeFile(`${SBX_WORKSPACE_ROOT}/top.txt`, 'top\n');
    await source.writeFile(`${SBX_WORKSPACE_ROOT}/src/deep/app.py`, 'print(1)\n');
    const client = new SbxSandboxClient({ provider, threadId: 'persist-a' });
    const archive = await (await client.create()).persistWorkspace();
    expect(archive.byteLength).toBeGreaterThan(0);
    const target = await client.create({ options: { threadId: 'persist-b' } });
    await target.hydrateWorkspace(archive);
    expect(await target.readFile({ path: 'src/deep/app.py' })).toBe('print(1)\n');
    expect(await target.execCommand({ cmd: 'cat top.txt' })).toBe('top\n');
    // A second hydrate finds files there: refused, nothing overwritten.
    await expect(target.hydrateWorkspace(archive)).rejects.toThrow(/empty workspace/);
  });

  it('a damaged or oversized archive is refused and the workspace stays empty', async () => {
    const source = await sandboxOf('persist-c');
    await source.writeFile(`${SBX_WORKSPACE_ROOT}/a.txt`, 'a'.repeat(10_000));
    const client = new SbxSandboxClient({ provider, threadId: 'persist-c' });
    const archive = await (await client.create()).persistWorkspace();
    const damaged = Uint8Array.from(archive);
    damaged[Math.floor(damaged.length / 2)]! ^= 0xff;
    const target = await client.create({ options: { threadId: 'persist-d' } });
    await expect(target.hydrateWorkspace(damaged)).rejects.toMatchObject({
      code: expect.stringMatching(/^CHECKPOINT_/),
    });
    target.setArchiveLimits({ maxInputBytes: 64 });
    await expect(target.hydrateWorkspace(archive)).rejects.toThrow(/over 64 bytes/);
    await expect(
      target.hydrateWorkspace(archive, { archiveLimits: { maxExtractedBytes: 100 } }),
    ).rejects.toMatchObject({ code: 'CHECKPOINT_LIMIT' });
    expect(await target.execCommand({ cmd: 'ls -A | wc -l' })).toBe('0\n');
  });

  it('persisting off a host-directory provider is the SDK’s unsupported-feature error', async () => {
    const memory = new MemorySandboxProvider();
    const session = await new SbxSandboxClient({ provider: memory, threadId: 'mem-1' }).create();
    await expect(session.persistWorkspace()).rejects.toBeInstanceOf(SandboxUnsupportedFeatureError);
    await expect(session.hydrateWorkspace(new Uint8Array(8))).rejects.toBeInstanceOf(
      SandboxUnsupportedFeatureError,
    );
    await memory.shutdown();
  });

  it('onExecOutput gets exec_command’s first line before the command ends', async () => {
    // Waits (bounded) for a file written only once the first line was seen.
    const gated =
      'echo first; for i in $(seq 400); do [ -f go ] && break; sleep 0.05; done; echo second';
    const seen: string[] = [];
    const opened: Promise<void>[] = [];
    const client = new SbxSandboxClient({
      provider,
      threadId: 'stream-1',
      onExecOutput: (event) => {
        seen.push(`${event.threadId}:${event.stream}:${event.text}`);
        if (event.text === 'first\n') {
          opened.push(
            sandboxOf('stream-1').then((sandbox) =>
              sandbox.writeFile(`${SBX_WORKSPACE_ROOT}/go`, ''),
            ),
          );
        }
      },
    });
    const model = new ScriptedModel([[{ tool: 'exec_command', args: { cmd: gated } }]]);
    const agent = new SandboxAgent({ name: 'coder', instructions: 'work', model });
    const result = await run(agent, 'go', { maxTurns: 5, sandbox: { client } });
    await Promise.all(opened);
    expect(seen).toEqual(['stream-1:stdout:first\n', 'stream-1:stdout:second\n']);
    expect(toolOutputs(result.newItems as readonly Item[])[0]?.[1]).toBe('first\nsecond\n');
  });
});
