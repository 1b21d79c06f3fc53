import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '@openai/agents';
import { SandboxAgent } from '@openai/agents/sandbox';
import { AioSandboxProvider } from '@sbx/aio';
import { parseSandboxConfig, silentLogger } from '@sbx/core';
import { requireService } from '@sbx/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { SbxSandboxClient } from './sbx-sandbox-client.js';
import { SBX_WORKSPACE_ROOT } from './sbx-sandbox-session.js';
import { ScriptedModel } from './scripted-model.test-support.js';

// The AIO provider's Docker stand-in image (tools/images/build-images.sh); skipped without Docker.
const IMAGE = 'sbx-test/aio-standin:1';
const dockerHost = await requireService('docker');
const dirs: string[] = [];
let provider: AioSandboxProvider | undefined;

afterAll(async () => {
  await provider?.shutdown();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe.skipIf(!dockerHost)('SbxSandboxClient behind a real SandboxAgent (AIO provider)', () => {
  it('runs shell commands and file edits in an AIO container', { timeout: 180_000 }, async () => {
    const baseDir = await mkdtemp(join(tmpdir(), 'sbx-agents-aio-'));
    dirs.push(baseDir);
    const config = parseSandboxConfig(
      {
        use: '@sbx/aio',
        image: IMAGE,
        container_prefix: `sbx-agents-${process.pid}`,
        port: 20000 + Math.floor(Math.random() * 20000),
        base_dir: baseDir,
        ownership: { type: 'memory' },
        aio: { network: 'host', ready_timeout_seconds: 60, stop_grace_seconds: 2 },
        spec: { images: [IMAGE], max_memory_mb: 2048 },
      },
      { env: {} },
    );
    provider = new AioSandboxProvider({ config, logger: silentLogger });
    await provider.ready();
    const model = new ScriptedModel([
      [{ tool: 'exec_command', args: { cmd: 'echo hi; exit 3' } }],
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
    const client = new SbxSandboxClient({ provider, userId: 'alice', threadId: 'aio-agents' });
    const result = await run(agent, 'go', { maxTurns: 10, sandbox: { client } });
    const outputs = result.newItems
      .filter((i) => i.type === 'tool_call_output_item')
      .map((i) => {
        const raw = i.rawItem as { output?: unknown };
        const output = raw.output as { text?: string } | string | undefined;
        return typeof output === 'string' ? output : (output?.text ?? '');
      });
    expect(outputs[0]).toMatch(/^hi\n[\s\S]*Exit Code: 3$/);
    expect(outputs.slice(1, 3)).toEqual([
      `Wrote ${SBX_WORKSPACE_ROOT}/hello.py`,
      `Wrote ${SBX_WORKSPACE_ROOT}/hello.py`,
    ]);
    expect(outputs[3]).toBe('print("sbx")');
  });
});
