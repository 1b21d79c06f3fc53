import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxAuthorizationError, SandboxCommandError } from '../errors/errors.js';
import type { MemoryCommandHandler } from '../testing/memory-sandbox.js';
import { MemorySandboxProvider } from '../testing/memory-sandbox-provider.js';
import { bashTool } from './bash-tool.js';
import { createToolContext } from './create-tool-context.js';
import { ensureSandboxInitialized } from './ensure-sandbox.js';
import type { ToolConfigInput } from './tool-config.js';
import type { ToolContext } from './tool-context.js';

function remote(onCommand?: MemoryCommandHandler, extra: Partial<ToolContext> = {}) {
  const provider = new MemorySandboxProvider({ sandboxOptions: onCommand ? { onCommand } : {} });
  const ctx = createToolContext({ provider, threadId: 't1', ...extra });
  const sandbox = () => provider.sandboxes.get('memory:default:t1')!;
  return { ctx, sandbox };
}

describe('§9A.1 bash on a remote sandbox', () => {
  it('starts in the workspace by virtual path, without a host timeout', async () => {
    const { ctx, sandbox } = remote(() => 'hi\n');
    expect(await bashTool(ctx, { command: 'echo hi' })).toBe('hi\n');
    expect(sandbox().commands).toEqual([
      {
        command: 'cd /mnt/user-data/workspace; echo hi',
        env: undefined,
        timeoutMs: undefined,
        scopeId: undefined,
      },
    ]);
  });

  it('injects the request env and redacts values of 8+ chars from the output', async () => {
    const { ctx, sandbox } = remote(
      (_cmd, options) => `token=${options.env?.API_TOKEN} n=${options.env?.N}\n`,
      {
        env: async () => ({ API_TOKEN: 'sk-live-1234567890', N: '42' }),
      },
    );
    expect(await bashTool(ctx, { command: 'printenv' })).toBe('token=[redacted] n=42\n');
    expect(sandbox().commands[0]?.env).toEqual({ API_TOKEN: 'sk-live-1234567890', N: '42' });
  });

  it('runs in the context command scope when one is set', async () => {
    const { ctx, sandbox } = remote(undefined, { commandScopeId: 'subagent:1' });
    await bashTool(ctx, { command: 'true' });
    expect(sandbox().commands[0]?.scopeId).toBe('subagent:1');
  });

  it('middle-truncates to bash_output_max_chars', async () => {
    const { ctx } = remote(() => 'a'.repeat(50) + 'b'.repeat(50), {
      config: { bashOutputMaxChars: 80 },
    });
    const out = await bashTool(ctx, { command: 'x' });
    expect(out).toBe(
      `${'a'.repeat(16)}\n... [middle truncated: 67 chars skipped] ...\n${'b'.repeat(17)}`,
    );
  });

  it('turns sandbox errors into Error: results and anything else into an unexpected-error result', async () => {
    const failing = remote(() => {
      throw new SandboxCommandError('shell died', 'x', 137);
    });
    expect(await bashTool(failing.ctx, { command: 'x' })).toBe(
      'Error: shell died (command=x, exit_code=137)',
    );
    const crashing = remote(() => {
      throw new RangeError('socket hang up');
    });
    expect(await bashTool(crashing.ctx, { command: 'x' })).toBe(
      'Error: Unexpected error executing command: RangeError: socket hang up',
    );
  });

  it('returns a denial as the tool result and runs nothing', async () => {
    const { ctx, sandbox } = remote(undefined, {
      authorize: async () => {
        throw new SandboxAuthorizationError(undefined, 'viewer');
      },
    });
    expect(await bashTool(ctx, { command: 'echo hi' })).toBe(
      'Error: Sandbox execution is not permitted for your role (role=viewer)',
    );
    expect(sandbox()).toBeUndefined();
  });
});

describe('§10.5 bash on a local (host) sandbox', () => {
  let base: string;
  let workspace: string;

  beforeAll(async () => {
    base = await mkdtemp(path.join(tmpdir(), 'sbx bash '));
    workspace = path.join(base, 'user-data', 'workspace');
    for (const dir of ['workspace', 'uploads', 'outputs']) {
      await mkdir(path.join(base, 'user-data', dir), { recursive: true });
    }
  });
  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
  });

  function local(
    config: ToolConfigInput = { allowHostBash: true },
    onCommand?: MemoryCommandHandler,
  ) {
    const provider = new MemorySandboxProvider({
      idPrefix: 'local',
      sandboxOptions: onCommand ? { onCommand } : {},
    });
    const ctx = createToolContext({
      provider,
      threadId: 't1',
      userId: 'alice',
      config,
      local: {
        threadData: {
          workspacePath: workspace,
          uploadsPath: path.join(base, 'user-data', 'uploads'),
          outputsPath: path.join(base, 'user-data', 'outputs'),
        },
      },
    });
    const sandbox = () => provider.sandboxes.get('local:alice:t1')!;
    return { ctx, sandbox };
  }

  it('refuses with the disabled message and never executes while host bash is off (#65)', async () => {
    const { ctx, sandbox } = local({});
    const out = await bashTool(ctx, { command: 'echo hi' });
    expect(out).toMatch(/^Error: Host bash execution is disabled/);
    expect(sandbox().commands).toEqual([]);
  });

  it('runs on a sandbox that confines its commands, even with host bash explicitly off', async () => {
    const { ctx, sandbox } = local({ allowHostBash: false });
    await ensureSandboxInitialized(ctx);
    Object.defineProperty(sandbox(), 'confined', { value: true });
    const out = await bashTool(ctx, { command: 'echo hi' });
    expect(out).not.toMatch(/Host bash execution is disabled/);
    expect(sandbox().commands).toHaveLength(1);
  });

  it('rejects a relative traversal before execution (#66)', async () => {
    const { ctx, sandbox } = local();
    expect(await bashTool(ctx, { command: 'cat ../uploads/secret.txt' })).toBe(
      'Error: Access denied: path traversal detected',
    );
    expect(sandbox().commands).toEqual([]);
  });

  it.each([
    ['cat /etc/passwd', 'Unsafe absolute paths in command: /etc/passwd'],
    ['curl file:///etc/shadow', 'Unsafe file:// URL in command'],
    ['cd / && ls', 'Unsafe working directory change'],
    ['ls /', 'Unsafe absolute paths in command: /.'],
  ])('blocks %s (#61)', async (command, message) => {
    const { ctx, sandbox } = local();
    expect(await bashTool(ctx, { command })).toContain(message);
    expect(sandbox().commands).toEqual([]);
  });

  it('starts in the workspace set as cwd, never prefixed to the command, and rewrites user-data paths (#67)', async () => {
    const cwds: (string | undefined)[] = [];
    const { ctx, sandbox } = local(undefined, (_command, options) => {
      cwds.push((options as { cwd?: string }).cwd);
      return '';
    });
    await bashTool(ctx, { command: 'cat /mnt/user-data/uploads/a.txt && /bin/echo ok' });
    expect(sandbox().commands[0]).toMatchObject({
      command: `cat ${path.join(base, 'user-data', 'uploads')}/a.txt && /bin/echo ok`,
      timeoutMs: 600_000,
    });
    expect(cwds).toEqual(['/mnt/user-data/workspace']);
  });

  it('passes the configured timeout and masks host paths in the output', async () => {
    const { ctx, sandbox } = local(
      { allowHostBash: true, bashCommandTimeoutSeconds: 5 },
      () => `wrote ${workspace}/out.txt\n`,
    );
    expect(await bashTool(ctx, { command: 'pwd' })).toBe(
      'wrote /mnt/user-data/workspace/out.txt\n',
    );
    expect(sandbox().commands[0]?.timeoutMs).toBe(5000);
  });

  it('masks host paths in unexpected errors', async () => {
    const { ctx } = local(undefined, () => {
      throw new Error(`spawn failed in ${workspace}`);
    });
    expect(await bashTool(ctx, { command: 'true' })).toBe(
      'Error: Unexpected error executing command: Error: spawn failed in /mnt/user-data/workspace',
    );
  });
});
