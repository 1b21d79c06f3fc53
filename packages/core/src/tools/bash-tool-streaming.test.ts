import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FULL_PROCESS_CAPABILITIES,
  type ExecOptions,
  type ExecResult,
  type SandboxCapabilities,
} from '../contract/sandbox-exec.js';
import { Deferred, track } from '../testing/deferred.js';
import type { ManualClock } from '../testing/manual-clock.js';
import { MemorySandbox } from '../testing/memory-sandbox.js';
import { MemorySandboxProvider } from '../testing/memory-sandbox-provider.js';
import { recordingLogger } from '../testing/recording-logger.js';
import { createToolContext } from './create-tool-context.js';
import { runToolCall } from './run-tool.js';
import type { ToolContext } from './tool-context.js';
import { createToolRunner } from './tool-runner.js';
import { hostShellThread } from '../testing/host-shell-sandbox-fixture.js';
import {
  MAX_STREAMED_OUTPUT_CHARS,
  streamLimitNotice,
  type ToolOutputChunk,
} from './tool-output.js';

/** A step of a scripted command: output on a stream, or a wait for the test. */
type Step = { out: string } | { err: string } | { gate: Promise<void> };

/** A sandbox whose commands print a script, piece by piece, through the exec listeners. */
class ScriptedStreamSandbox extends MemorySandbox {
  constructor(
    id: string,
    private readonly script: (command: string) => readonly Step[],
  ) {
    super(id);
  }

  override get capabilities(): SandboxCapabilities {
    return { ...FULL_PROCESS_CAPABILITIES, backgroundProcesses: false };
  }

  override async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    let stdout = '';
    let stderr = '';
    for (const step of this.script(command)) {
      if ('gate' in step) await step.gate;
      else if ('out' in step) {
        stdout += step.out;
        options.onStdout?.(step.out);
      } else {
        stderr += step.err;
        options.onStderr?.(step.err);
      }
    }
    return { exitCode: 0, stdout, stderr, durationMs: 0, truncated: false, timedOut: false };
  }
}

function collect(): { chunks: ToolOutputChunk[]; text: () => string; first: Deferred } {
  const chunks: ToolOutputChunk[] = [];
  return { chunks, text: () => chunks.map((c) => c.text).join(''), first: new Deferred() };
}

describe('bash streams its output while the command runs', () => {
  let base: string;
  let fifo: string;
  let clock: ManualClock;
  let provider: MemorySandboxProvider;
  let context: ToolContext;

  beforeAll(async () => {
    base = await mkdtemp(path.join(tmpdir(), 'sbx-bash-stream-'));
  });
  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
  });

  async function hostShell(config: ToolContext['config'] = {}): Promise<void> {
    ({ fifo, clock, provider, context } = await hostShellThread(base, config));
  }

  it('delivers the first line of a real command before the command ends', async () => {
    await hostShell();
    const seen = collect();
    const call = track(
      runToolCall(
        'bash',
        { command: `echo first; read go < '${fifo}'; echo "second $go"` },
        context,
        {
          onOutput: (chunk) => {
            seen.chunks.push(chunk);
            seen.first.resolve();
          },
        },
      ),
    );
    await seen.first.promise;
    expect(call.settled).toBe(false);
    expect(seen.chunks).toEqual([{ stream: 'stdout', text: 'first\n' }]);
    await writeFile(fifo, 'go\n');
    const result = await call.promise;
    expect(result).toMatchObject({ text: 'first\nsecond go\n', isError: false });
    expect(seen.text()).toBe('first\nsecond go\n');
    await provider.sandboxes.get(provider.idFor({ userId: 'alice', threadId: 't1' }))?.close();
  });

  it('streams stderr as its own stream, and the result is the same as without a listener', async () => {
    await hostShell();
    const command = 'echo out; echo err >&2; exit 3';
    const seen = collect();
    const streamed = await runToolCall('bash', { command }, context, {
      onOutput: (chunk) => seen.chunks.push(chunk),
    });
    const plain = await runToolCall('bash', { command }, context);
    expect(streamed).toEqual(plain);
    expect(streamed.error?.code).toBe('COMMAND_FAILED');
    expect(seen.chunks.filter((c) => c.stream === 'stdout').map((c) => c.text)).toEqual(['out\n']);
    expect(seen.chunks.filter((c) => c.stream === 'stderr').map((c) => c.text)).toEqual(['err\n']);
  });

  it('in the yield mode, streams while the call waits and nothing once it returned', async () => {
    await hostShell({ processTools: true });
    // What the call hands the process table: listeners it takes back when it returns.
    const processes = provider.sandboxes.get(
      provider.idFor({ userId: 'alice', threadId: 't1' }),
    )!.processes;
    const start = processes.start.bind(processes);
    let listenUntil: AbortSignal | undefined;
    processes.start = (command, options) => {
      listenUntil = options?.listenUntil;
      return start(command, options);
    };
    const seen = collect();
    const call = track(
      runToolCall(
        'bash',
        { command: `echo first; read go < '${fifo}'; echo after`, yield_time_ms: 1_000 },
        context,
        {
          onOutput: (chunk) => {
            seen.chunks.push(chunk);
            seen.first.resolve();
          },
        },
      ),
    );
    await seen.first.promise;
    expect(call.settled).toBe(false);
    expect(listenUntil?.aborted).toBe(false);
    // The yield time passes on the process table's clock: the call returns, the process runs on.
    await clock.advance(1_000);
    const yielded = await call.promise;
    expect(yielded.text).toContain('is still running after 1000 ms');
    // The process runs on, but its output is no longer decoded for a listener that is gone.
    expect(listenUntil?.aborted).toBe(true);
    const id = /process_id="([^"]+)"/.exec(yielded.text)?.[1];
    expect(id).toBeDefined();
    expect(seen.text()).toBe('first\n');
    await writeFile(fifo, 'go\n');
    const ended = await runToolCall(
      'process_output',
      { process_id: id, wait_ms: 600_000 },
      context,
    );
    expect(ended.text).toContain('after');
    expect(ended.text).toContain('exited with code 0');
    expect(seen.text()).toBe('first\n');
  });
});

describe('what bash streams is what its result shows', () => {
  let base: string;
  let workspace: string;

  beforeAll(async () => {
    base = await mkdtemp(path.join(tmpdir(), 'sbx-bash-stream-local-'));
    workspace = path.join(base, 'user-data', 'workspace');
    for (const dir of ['workspace', 'uploads', 'outputs']) {
      await mkdir(path.join(base, 'user-data', dir), { recursive: true });
    }
  });
  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
  });

  function scripted(
    script: (command: string) => readonly Step[],
    extra: Partial<Parameters<typeof createToolContext>[0]> = {},
  ): ToolContext {
    const provider = new MemorySandboxProvider({ idPrefix: 'local' });
    const id = provider.idFor({ userId: 'alice', threadId: 't1' });
    provider.sandboxes.set(id, new ScriptedStreamSandbox(id, script));
    return createToolContext({
      provider,
      userId: 'alice',
      threadId: 't1',
      config: { allowHostBash: true },
      local: {
        threadData: {
          workspacePath: workspace,
          uploadsPath: path.join(base, 'user-data', 'uploads'),
          outputsPath: path.join(base, 'user-data', 'outputs'),
        },
      },
      ...extra,
    });
  }

  it('masks host paths and redacts secrets, also when a chunk ends inside one', async () => {
    // Built at run time: a secret, and a multi-line one (a key) that is printed whole.
    const token = Buffer.from('c2stbGl2ZS0xMjM0NTY3ODkw', 'base64').toString();
    const key = ['-----BEGIN TEST KEY-----', 'bWFueSBzZWNyZXQgYnl0ZXM=', '-----END TEST KEY-----'];
    const gate = new Deferred();
    const context = scripted(
      () => [
        { out: `wrote ${workspace.slice(0, 9)}` },
        { out: `${workspace.slice(9)}/a.txt\ntoken=${token.slice(0, 5)}` },
        { err: `${key[0]}\n` },
        { gate: gate.promise },
        { out: `${token.slice(5)}\n` },
        { err: `${key[1]}\n${key[2]}\n` },
      ],
      { env: { API_TOKEN: token, KEY: key.join('\n') } },
    );
    const seen = collect();
    const call = track(
      runToolCall('bash', { command: 'x' }, context, {
        onOutput: (chunk) => {
          seen.chunks.push(chunk);
          seen.first.resolve();
        },
      }),
    );
    await seen.first.promise;
    // The line with the cut secret is held until its end arrives; the key's first line is shown
    // before the rest of the key is printed, so it cannot be redacted as part of the whole value.
    expect(seen.chunks).toEqual([
      { stream: 'stdout', text: 'wrote /mnt/user-data/workspace/a.txt\n' },
      { stream: 'stderr', text: '[redacted]\n' },
    ]);
    gate.resolve();
    const result = await call.promise;
    const streamed = seen.text();
    expect(streamed).not.toContain(token);
    expect(streamed).not.toContain(workspace);
    for (const line of key) expect(streamed).not.toContain(line);
    expect(seen.chunks.filter((c) => c.stream === 'stdout').map((c) => c.text)).toEqual([
      'wrote /mnt/user-data/workspace/a.txt\n',
      'token=[redacted]\n',
    ]);
    expect(seen.chunks.filter((c) => c.stream === 'stderr').map((c) => c.text)).toEqual([
      '[redacted]\n',
      '[redacted]\n[redacted]\n',
    ]);
    expect(result.text).not.toContain(token);
    expect(result.text).toContain('token=[redacted]');
  });

  it('stops at bashOutputMaxChars with one notice, and calls the listener no more', async () => {
    const context = scripted(
      () => Array.from({ length: 50 }, () => ({ out: `${'x'.repeat(9)}\n` })),
      {
        config: { allowHostBash: true, bashOutputMaxChars: 35 },
      },
    );
    const seen = collect();
    const result = await runToolCall('bash', { command: 'x' }, context, {
      onOutput: (chunk) => seen.chunks.push(chunk),
    });
    expect(seen.text()).toBe(
      `${'x'.repeat(9)}\n`.repeat(3) + 'x'.repeat(5) + streamLimitNotice(35),
    );
    expect(seen.chunks.at(-1)?.text).toBe(streamLimitNotice(35));
    expect(seen.chunks).toHaveLength(5);
    expect(result.text.length).toBeLessThanOrEqual(35);
  });

  it('never cuts a character in two at the limit', async () => {
    const context = scripted(() => [{ out: 'a\u{1F600}\u{1F600}\n' }], {
      config: { allowHostBash: true, bashOutputMaxChars: 4 },
    });
    const seen = collect();
    await runToolCall('bash', { command: 'x' }, context, {
      onOutput: (chunk) => seen.chunks.push(chunk),
    });
    expect(seen.chunks.map((c) => c.text)).toEqual(['a\u{1F600}', streamLimitNotice(4)]);
  });

  it('bounds the stream when the result cap is off', async () => {
    const line = `${'y'.repeat(1023)}\n`;
    const lines = MAX_STREAMED_OUTPUT_CHARS / line.length + 10;
    const context = scripted(() => Array.from({ length: lines }, () => ({ out: line })), {
      config: { allowHostBash: true, bashOutputMaxChars: 0 },
    });
    let chars = 0;
    let last = '';
    await runToolCall('bash', { command: 'x' }, context, {
      onOutput: (chunk) => {
        chars += chunk.text.length;
        last = chunk.text;
      },
    });
    expect(last).toBe(streamLimitNotice(MAX_STREAMED_OUTPUT_CHARS));
    expect(chars).toBe(MAX_STREAMED_OUTPUT_CHARS + last.length);
  });

  it('a listener that throws is logged once and called no more; the call goes on', async () => {
    const logger = recordingLogger();
    const context = scripted(() => [{ out: 'a\n' }, { out: 'b\n' }, { err: 'c\n' }], { logger });
    let calls = 0;
    const result = await runToolCall('bash', { command: 'x' }, context, {
      onOutput: () => {
        calls += 1;
        throw new Error('listener bug');
      },
    });
    expect(calls).toBe(1);
    expect(result).toMatchObject({ text: 'a\nb\n\nStd Error:\nc\n', isError: false });
    expect(logger.lines.filter((l) => l.level === 'warn')).toEqual([
      {
        level: 'warn',
        msg: 'a tool output listener threw; it gets no more output',
        fields: { sandboxId: 'local:alice:t1', error: 'listener bug' },
      },
    ]);
  });

  it("gives each call's output to that call's listener only (runner calls, concurrently)", async () => {
    const gates = [new Deferred(), new Deferred()];
    const context = scripted((command) => {
      const i = command === 'a' ? 0 : 1;
      return [
        { out: `call ${i} starts\n` },
        { gate: gates[i]!.promise },
        { out: `call ${i} ends\n` },
      ];
    });
    const runner = createToolRunner({ context });
    const a = collect();
    const b = collect();
    const first = runner.call('bash', { command: 'a' }, { onOutput: (c) => a.chunks.push(c) });
    const second = runner.call('bash', { command: 'b' }, { onOutput: (c) => b.chunks.push(c) });
    gates[1]!.resolve();
    await second;
    gates[0]!.resolve();
    await first;
    expect(a.text()).toBe('call 0 starts\ncall 0 ends\n');
    expect(b.text()).toBe('call 1 starts\ncall 1 ends\n');
    const read = collect();
    await runner.call('ls', { path: '/mnt/user-data' }, { onOutput: (c) => read.chunks.push(c) });
    expect(read.chunks).toEqual([]);
  });
});
