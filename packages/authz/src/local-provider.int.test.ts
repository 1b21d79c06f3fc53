// The gate in front of the real host-backed provider: real directories, real shell processes.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createToolContext, runTool, runToolCall, silentLogger } from '@sbx/core';
import type { AcquireOptions, ToolConfigInput, ToolContext } from '@sbx/core';
import { LocalSandboxProvider } from '@sbx/local';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuthorizationConfig } from './authorization-config.js';
import { tryAcquireSandboxForRequest } from './gateway.js';
import { buildPrincipal } from './principal.js';
import type { Principal } from './principal.js';
import { createSandboxAuthorizer } from './sandbox-authorizer.js';
import { countingRbac, rbacConfig, recordingLogger } from './test-support.js';

class CountingLocalProvider extends LocalSandboxProvider {
  readonly acquires: AcquireOptions[] = [];
  override acquire(options: AcquireOptions = {}): Promise<string> {
    this.acquires.push(options);
    return super.acquire(options);
  }
}

const NOTES = '/mnt/user-data/workspace/notes.md';

describe('sandbox:execute gate with @sbx/local', () => {
  let baseDir: string;
  let provider: CountingLocalProvider;

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'sbx-authz-local-'));
    provider = new CountingLocalProvider({ baseDir, allowHostBash: true, logger: silentLogger });
  });

  afterEach(async () => {
    await provider.shutdown();
    await rm(baseDir, { recursive: true, force: true });
  });

  function run(
    initialRole: string,
    config: AuthorizationConfig = rbacConfig(),
    toolConfig: ToolConfigInput = {},
  ): { context: ToolContext; setRole(role: string): void; calls: { role?: string }[] } {
    let principal: Principal = buildPrincipal({ userId: 'alice', userRole: initialRole });
    const counting = countingRbac();
    const context = createToolContext({
      provider,
      threadId: 'thread-1',
      userId: 'alice',
      local: { threadData: provider.threadData('alice', 'thread-1') },
      config: { allowHostBash: true, ...toolConfig },
      authorize: createSandboxAuthorizer({
        config,
        getPrincipal: () => principal,
        resolveProvider: counting.resolveProvider,
        logger: recordingLogger(),
      }),
    });
    return {
      context,
      calls: counting.calls,
      setRole: (role) => (principal = buildPrincipal({ userId: 'alice', userRole: role })),
    };
  }

  it('§7.25 a denied role gets the tool error and no local sandbox is created', async () => {
    const { context } = run('guest');
    expect(await runTool('bash', { command: 'echo hi' }, context)).toBe(
      'Error: Sandbox execution is not permitted for your role (role=guest)',
    );
    expect(provider.acquires).toEqual([]);
    expect(context.state.sandboxId).toBeUndefined();
  });

  it('an allowed role works end to end, one decision per tool call', async () => {
    const { context, calls } = run('admin');
    expect(await runTool('write_file', { path: NOTES, content: 'hello\n' }, context)).toBe('OK');
    expect(await runTool('read_file', { path: NOTES }, context)).toBe('hello\n');
    expect(await runTool('write_file', { path: NOTES, content: 'hello again\n' }, context)).toBe(
      'OK',
    );
    expect((await runTool('bash', { command: 'cat notes.md' }, context)).trim()).toBe(
      'hello again',
    );
    expect(provider.acquires).toHaveLength(1);
    expect(calls).toHaveLength(4);
  });

  it('a role change between two calls denies the cached sandbox', async () => {
    const { context, setRole } = run('admin');
    expect(await runTool('write_file', { path: NOTES, content: 'v1' }, context)).toBe('OK');
    const id = context.state.sandboxId!;
    setRole('guest');
    expect(await runTool('bash', { command: 'echo v2 > notes.md' }, context)).toMatch(
      /not permitted for your role \(role=guest\)/,
    );
    expect(provider.get(id)).toBeDefined();
    setRole('admin');
    expect(await runTool('read_file', { path: NOTES }, context)).toBe('v1');
    expect(provider.acquires).toHaveLength(1);
  });

  it('the process tools pass the same gate: a denied role reaches no process', async () => {
    const { context, setRole, calls } = run('admin', rbacConfig(), { processTools: true });
    const started = await runToolCall(
      'bash',
      { command: 'echo ready; while read l; do echo "got:$l"; done', yield_time_ms: 300 },
      context,
    );
    const id = /process_id="(p\d+)"/.exec(started.text)?.[1];
    expect(id).toBeDefined();
    setRole('guest');
    const denied: [string, Record<string, unknown>][] = [
      ['process_output', { process_id: id }],
      ['process_write', { process_id: id, input: 'from-guest\n' }],
      ['process_kill', { process_id: id, signal: 'SIGKILL' }],
      ['process_list', {}],
    ];
    for (const [tool, args] of denied) {
      const out = await runToolCall(tool, args, context);
      expect(out.isError, tool).toBe(true);
      expect(out.text, tool).toBe(
        'Error: Sandbox execution is not permitted for your role (role=guest)',
      );
    }
    // Nothing reached the process: it runs on and never read the guest's input.
    setRole('admin');
    const after = await runToolCall('process_output', { process_id: id }, context);
    expect(after.text).not.toContain('from-guest');
    expect(after.text).toMatch(/is running\]$/);
    await runToolCall('process_kill', { process_id: id, signal: 'SIGKILL' }, context);
    // One decision per call: bash, the four denied, and the two after.
    expect(calls).toHaveLength(7);
  });

  it('§7.28 gateway upload: allowed syncs into the thread, denied acquires nothing', async () => {
    const denied = await tryAcquireSandboxForRequest({
      provider,
      principal: buildPrincipal({ userId: 'alice', userRole: 'guest' }),
      threadId: 'thread-1',
      userId: 'alice',
      kind: 'upload',
      config: rbacConfig(),
    });
    expect(denied).toBeUndefined();
    expect(provider.acquires).toEqual([]);

    const lease = await tryAcquireSandboxForRequest({
      provider,
      principal: buildPrincipal({ userId: 'alice', userRole: 'admin' }),
      threadId: 'thread-1',
      userId: 'alice',
      kind: 'upload',
      config: rbacConfig(),
    });
    expect(lease).toBeDefined();
    try {
      await lease!.run((sandbox) =>
        sandbox.updateFile('/mnt/user-data/uploads/a.txt', new TextEncoder().encode('data')),
      );
    } finally {
      await lease!.release();
    }
    const { context } = run('admin');
    expect(await runTool('bash', { command: 'cat /mnt/user-data/uploads/a.txt' }, context)).toBe(
      'data',
    );
    expect(provider.acquires).toHaveLength(2);
  });
});
