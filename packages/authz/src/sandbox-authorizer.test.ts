import { SandboxAuthorizationError, runTool, runToolInvocation } from '@sbx/core';
import type { AgentSkillPolicy, ToolContext } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import type { AuthorizationConfig } from './authorization-config.js';
import { eagerAcquireWithAuthorization } from './eager-acquire.js';
import { buildPrincipal } from './principal.js';
import type { Principal } from './principal.js';
import { createSandboxAuthorizer } from './sandbox-authorizer.js';
import type { SandboxGateOptions } from './sandbox-gate.js';
import {
  MemoryProvider,
  countingRbac,
  failingProvider,
  rbacConfig,
  recordingLogger,
} from './test-support.js';

const FILE = '/mnt/user-data/workspace/notes.md';
const DENIED = (role: string) =>
  `Error: Sandbox execution is not permitted for your role (role=${role})`;

interface Harness {
  provider: MemoryProvider;
  context: ToolContext;
  calls: ReturnType<typeof countingRbac>['calls'];
  /** Change the caller's role between tool calls. */
  setRole(role: string | undefined): void;
  setConfig(config: AuthorizationConfig | undefined): void;
}

function harness(
  role: string | undefined,
  gate: Partial<SandboxGateOptions> = {},
  config: AuthorizationConfig | undefined = rbacConfig(),
): Harness {
  const provider = new MemoryProvider();
  const counting = countingRbac();
  let principal: Principal = buildPrincipal({ userRole: role, userId: 'u1' });
  let current: AuthorizationConfig | undefined = config;
  const context: ToolContext = {
    provider,
    threadId: 't1',
    userId: 'u1',
    state: {},
    authorize: createSandboxAuthorizer<ToolContext>({
      config: () => current,
      getPrincipal: () => principal,
      resolveProvider: counting.resolveProvider,
      logger: recordingLogger(),
      ...gate,
    }),
  };
  return {
    provider,
    context,
    calls: counting.calls,
    setRole: (r) => (principal = buildPrincipal({ userRole: r, userId: 'u1' })),
    setConfig: (c) => (current = c),
  };
}

describe('sandbox:execute through the core tool layer', () => {
  it('§7.25 deny → the tool error result, and provider.acquire is never called', async () => {
    const h = harness('guest');
    const out = await runTool('bash', { command: 'echo hi' }, h.context);
    expect(out).toBe(DENIED('guest'));
    expect(out).toMatch(/not permitted for your role/);
    expect(h.provider.acquired).toEqual([]);
    expect(h.context.state.sandboxId).toBeUndefined();
  });

  it('§7.25 allow → the sandbox is acquired lazily and the tool runs', async () => {
    const h = harness('admin');
    const out = await runTool('bash', { command: 'echo hi' }, h.context);
    expect(out).toContain('ran:');
    expect(h.provider.acquired).toHaveLength(1);
    expect(h.provider.acquired[0]).toMatchObject({ threadId: 't1', userId: 'u1' });
    expect(h.calls).toEqual([
      { role: 'admin', resource: 'sandbox', action: 'execute', target: '*' },
    ]);
  });

  it('the gate runs before reusing a persisted sandbox id', async () => {
    const h = harness('guest');
    const id = await h.provider.acquire({ threadId: 't1' });
    h.context.state.sandboxId = id;
    const out = await runTool('read_file', { path: FILE }, h.context);
    expect(out).toBe(DENIED('guest'));
    expect(h.provider.get(id)!.operations).toEqual([]);
  });

  it('a role change between two calls applies while the sandbox stays cached', async () => {
    const h = harness('admin');
    expect(await runTool('bash', { command: 'first' }, h.context)).toContain('ran: ');
    const sandbox = h.provider.get(h.context.state.sandboxId!)!;
    const opsAfterFirst = sandbox.operations.length;

    h.setRole('guest');
    expect(await runTool('bash', { command: 'second' }, h.context)).toBe(DENIED('guest'));
    expect(sandbox.operations).toHaveLength(opsAfterFirst);

    h.setRole('admin');
    expect(await runTool('bash', { command: 'third' }, h.context)).toContain('ran: ');
    expect(h.provider.acquired).toHaveLength(1);
    expect(h.calls.map((c) => c.role)).toEqual(['admin', 'guest', 'admin']);
  });

  it('a policy change applies to the next call (nothing cached across invocations)', async () => {
    const h = harness('user');
    expect(await runTool('bash', { command: 'a' }, h.context)).toContain('ran: ');
    h.setConfig(
      rbacConfig({ provider: { config: { roles: { user: { sandbox: { allow: [] } } } } } }),
    );
    expect(await runTool('bash', { command: 'b' }, h.context)).toBe(DENIED('user'));
    h.setConfig(undefined);
    expect(await runTool('bash', { command: 'c' }, h.context)).toContain('ran: ');
  });

  it('§7.20 a failing provider denies through the tool when fail_closed', async () => {
    const h = harness('admin', { resolveProvider: () => failingProvider() });
    expect(await runTool('bash', { command: 'x' }, h.context)).toBe(DENIED('admin'));
    expect(h.provider.acquired).toEqual([]);
  });

  it('§7.20 a failing provider allows through the tool when fail-open, with a warning', async () => {
    const logger = recordingLogger();
    const h = harness(
      'admin',
      { resolveProvider: () => failingProvider(), logger },
      rbacConfig({ failClosed: false }),
    );
    expect(await runTool('bash', { command: 'x' }, h.context)).toContain('ran: ');
    expect(logger.lines.filter((l) => l.level === 'warn')).toHaveLength(1);
  });

  it('§7.21 a provider that cannot be resolved: deny (no role) when closed, allow when open', async () => {
    const broken = { provider: { use: 'not-installed#P', config: {} } };
    const importer = () => Promise.reject(new Error('Cannot find package'));
    const closed = harness('admin', { resolveProvider: undefined, importer }, rbacConfig(broken));
    expect(await runTool('bash', { command: 'x' }, closed.context)).toBe(
      'Error: Sandbox execution is not permitted for your role',
    );
    const open = harness(
      'admin',
      { resolveProvider: undefined, importer },
      rbacConfig({ ...broken, failClosed: false }),
    );
    expect(await runTool('bash', { command: 'x' }, open.context)).toContain('ran: ');
  });
});

describe('§7.32 exactly one decision per composed tool invocation', () => {
  async function seeded(role = 'admin'): Promise<Harness> {
    const h = harness(role);
    const id = await h.provider.acquire({ threadId: 't1' });
    h.provider.get(id)!.files.set(FILE, 'line one\nline two\n');
    h.context.state.sandboxId = id;
    return h;
  }

  it('read_file with its post-read mark: one decision', async () => {
    const h = await seeded();
    expect(await runTool('read_file', { path: FILE, start_line: 2 }, h.context)).toContain('two');
    // The ranged read re-read the whole file for the mark: two sandbox touches, one decision.
    expect(h.provider.get(h.context.state.sandboxId!)!.operations).toEqual([
      `read:${FILE}`,
      `read:${FILE}`,
    ]);
    expect(h.calls).toHaveLength(1);
  });

  it('write_file with the read-before-write pre-read and post-write mark: one decision', async () => {
    const h = await seeded();
    await runTool('read_file', { path: FILE }, h.context);
    h.calls.length = 0;
    expect(await runTool('write_file', { path: FILE, content: 'new' }, h.context)).toBe('OK');
    const ops = h.provider.get(h.context.state.sandboxId!)!.operations.slice(-3);
    expect(ops).toEqual([`read:${FILE}`, `write:${FILE}`, `read:${FILE}`]);
    expect(h.calls).toHaveLength(1);
  });

  it('str_replace (read, write, mark): one decision', async () => {
    const h = await seeded();
    await runTool('read_file', { path: FILE }, h.context);
    h.calls.length = 0;
    expect(
      await runTool('str_replace', { path: FILE, old_str: 'one', new_str: '1' }, h.context),
    ).toBe('OK');
    expect(h.calls).toHaveLength(1);
  });

  it('a host-composed invocation (runToolInvocation around several tools) decides once', async () => {
    const h = await seeded();
    await runToolInvocation(h.context, async () => {
      await runTool('read_file', { path: FILE }, h.context);
      await runTool('write_file', { path: FILE, content: 'v2' }, h.context);
      await runTool('bash', { command: 'cat notes.md' }, h.context);
    });
    expect(h.calls).toHaveLength(1);
  });

  it('independent invocations decide again, also when they run concurrently', async () => {
    const h = await seeded();
    await Promise.all([
      runTool('read_file', { path: FILE }, h.context),
      runTool('bash', { command: 'x' }, h.context),
      runTool('ls', { path: '/mnt/user-data/workspace' }, h.context),
    ]);
    expect(h.calls).toHaveLength(3);
  });

  it('a denied write is an error result, never a fail-open write', async () => {
    const h = await seeded('guest');
    const out = await runTool('write_file', { path: FILE, content: 'clobber' }, h.context);
    expect(out).toBe(DENIED('guest'));
    const sandbox = h.provider.get(h.context.state.sandboxId!)!;
    expect(sandbox.files.get(FILE)).toBe('line one\nline two\n');
    expect(sandbox.operations).toEqual([]);
    expect(h.calls).toHaveLength(1);
  });
});

describe('eager (before-agent) acquisition', () => {
  function eager(h: Harness, skillPolicy?: AgentSkillPolicy) {
    return eagerAcquireWithAuthorization({
      authorize: () => h.context.authorize!(h.context),
      acquire: async () => {
        const id = await h.provider.acquire({ threadId: 't1', userId: 'u1' });
        h.context.state.sandboxId = id;
        return id;
      },
      skillPolicy,
      logger: recordingLogger(),
    });
  }

  it('§7.27 deny → skipped (undefined), acquire never called; the first tool call reports it', async () => {
    const h = harness('guest');
    expect(await eager(h)).toBeUndefined();
    expect(h.provider.acquired).toEqual([]);
    expect(await runTool('ls', { path: '/mnt/user-data/workspace' }, h.context)).toBe(
      DENIED('guest'),
    );
  });

  it('§7.41 explicit skill policy + deny → SandboxAuthorizationError, no acquire', async () => {
    const h = harness('guest');
    await expect(eager(h, { allowedSkills: ['pdf'] })).rejects.toBeInstanceOf(
      SandboxAuthorizationError,
    );
    expect(h.provider.acquired).toEqual([]);
  });

  it('allow → acquired eagerly; the lazy tool path reuses it and still decides again', async () => {
    const h = harness('admin');
    const id = await eager(h);
    expect(id).toBeDefined();
    expect(await runTool('bash', { command: 'x' }, h.context)).toContain('ran: ');
    expect(h.provider.acquired).toHaveLength(1);
    expect(h.calls).toHaveLength(2);
  });

  it('lazy path: nothing is acquired before the first sandbox tool call', async () => {
    const h = harness('admin');
    expect(h.provider.acquired).toEqual([]);
    await runTool('bash', { command: 'x' }, h.context);
    expect(h.provider.acquired).toHaveLength(1);
  });

  it('errors other than a deny propagate from the eager path', async () => {
    await expect(
      eagerAcquireWithAuthorization({
        authorize: async () => undefined,
        acquire: () => Promise.reject(new Error('no capacity')),
      }),
    ).rejects.toThrow('no capacity');
    await expect(
      eagerAcquireWithAuthorization({
        authorize: () => Promise.reject(new TypeError('bug')),
        acquire: async () => 'never',
      }),
    ).rejects.toThrow('bug');
  });
});

describe('createSandboxAuthorizer', () => {
  it('accepts a fixed principal', async () => {
    const authorize = createSandboxAuthorizer({
      config: rbacConfig(),
      principal: buildPrincipal({ userRole: 'guest' }),
      logger: recordingLogger(),
    });
    await expect(authorize(undefined)).rejects.toThrow(DENIED('guest').slice('Error: '.length));
  });

  it('disabled config → every tool runs without a provider', async () => {
    const h = harness('guest', {}, rbacConfig({ enabled: false }));
    expect(await runTool('bash', { command: 'x' }, h.context)).toContain('ran: ');
    expect(h.calls).toEqual([]);
  });
});
