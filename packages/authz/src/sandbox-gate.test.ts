import { ProviderLoadError, SandboxAuthorizationError } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import type { AuthorizationConfig } from './authorization-config.js';
import type { AuthorizationProvider } from './authorization-provider.js';
import { buildPrincipal } from './principal.js';
import type { Principal } from './principal.js';
import { authorizeSandboxExecution, withSandboxAuthorizationScope } from './sandbox-gate.js';
import type { SandboxGateOptions } from './sandbox-gate.js';
import { countingRbac, failingProvider, rbacConfig, recordingLogger } from './test-support.js';

const as = (role?: string): Principal =>
  buildPrincipal(role === undefined ? {} : { userRole: role });

async function denial(promise: Promise<unknown>): Promise<SandboxAuthorizationError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(SandboxAuthorizationError);
    return err as SandboxAuthorizationError;
  }
  throw new Error('expected a SandboxAuthorizationError');
}

function withRoles(roles: Record<string, unknown>, overrides: Partial<AuthorizationConfig> = {}) {
  return rbacConfig({ provider: { config: { roles } }, ...overrides });
}

describe('authorizeSandboxExecution: enabling', () => {
  it('§7.17 authorization disabled → no-op, no provider resolved', async () => {
    let resolved = 0;
    const options: SandboxGateOptions = {
      config: rbacConfig({ enabled: false }),
      resolveProvider: () => {
        resolved++;
        return failingProvider();
      },
    };
    expect(await authorizeSandboxExecution(as('blocked'), options)).toEqual({ status: 'disabled' });
    expect(resolved).toBe(0);
  });

  it('§7.26 no config (undefined, null, or a getter returning nothing) → no-op', async () => {
    for (const config of [undefined, null, () => undefined, async () => null]) {
      expect(await authorizeSandboxExecution(as('blocked'), { config })).toEqual({
        status: 'disabled',
      });
    }
  });

  it('§7.17 only a literal `enabled: true` enables the gate (truthy values do not)', async () => {
    const config = { ...rbacConfig(), enabled: 'yes' } as unknown as AuthorizationConfig;
    expect((await authorizeSandboxExecution(as('blocked'), { config })).status).toBe('disabled');
  });

  it('a config getter that throws denies (fail-closed default) and logs a warning', async () => {
    const logger = recordingLogger();
    const err = await denial(
      authorizeSandboxExecution(as('admin'), {
        config: () => {
          throw new Error('config.yaml unreadable');
        },
        logger,
      }),
    );
    expect(err.role).toBeUndefined();
    expect((err.cause as Error).message).toBe('config.yaml unreadable');
    expect(logger.lines.map((l) => l.level)).toEqual(['warn']);
  });
});

describe('authorizeSandboxExecution: RBAC decisions', () => {
  it('§7.18 sandbox allow "*" → allowed', async () => {
    const outcome = await authorizeSandboxExecution(as('admin'), { config: rbacConfig() });
    expect(outcome).toMatchObject({ status: 'allowed', decision: { allowed: true } });
  });

  it('§7.18 sandbox allow [] → SandboxAuthorizationError "not permitted for your role"', async () => {
    const err = await denial(authorizeSandboxExecution(as('guest'), { config: rbacConfig() }));
    expect(err.message).toMatch(/not permitted for your role/);
    expect(err.message).toBe('Sandbox execution is not permitted for your role (role=guest)');
    expect(err.code).toBe('SANDBOX_AUTHORIZATION');
  });

  it('§7.18 sandbox allow false → SandboxAuthorizationError', async () => {
    const err = await denial(authorizeSandboxExecution(as('blocked'), { config: rbacConfig() }));
    expect(err.role).toBe('blocked');
  });

  it('§7.19 a role with no sandbox policy (only tools) is allowed', async () => {
    const outcome = await authorizeSandboxExecution(as('user'), { config: rbacConfig() });
    expect(outcome).toMatchObject({
      status: 'allowed',
      decision: { reason: { code: 'authz.no_policy' } },
    });
  });

  it('§7.22 an internal caller without a role is evaluated under default_role', async () => {
    const internal = buildPrincipal({ isInternal: true, userRole: null });
    expect(internal.role).toBeUndefined();
    const denied = await denial(
      authorizeSandboxExecution(internal, { config: rbacConfig({ defaultRole: 'guest' }) }),
    );
    expect(denied.role).toBe('guest');
    const allowed = await authorizeSandboxExecution(internal, {
      config: rbacConfig({ defaultRole: 'admin' }),
    });
    expect(allowed.status).toBe('allowed');
  });

  it('§7.23 the raised error carries .role == "user" for a denied user', async () => {
    const config = withRoles({ user: { sandbox: { allow: [] } } });
    const err = await denial(authorizeSandboxExecution(as('user'), { config }));
    expect(err.role).toBe('user');
    expect(err.details).toEqual({ role: 'user' });
  });

  it('§7.24 the provider receives resource "sandbox", action "execute", target "*"', async () => {
    const { calls, resolveProvider } = countingRbac();
    await authorizeSandboxExecution(as('admin'), { config: rbacConfig(), resolveProvider });
    expect(calls).toEqual([{ role: 'admin', resource: 'sandbox', action: 'execute', target: '*' }]);
  });

  it('an unknown role is a provider error: denied when fail_closed', async () => {
    const err = await denial(
      authorizeSandboxExecution(as('wizard'), { config: rbacConfig(), logger: recordingLogger() }),
    );
    expect(err.role).toBe('wizard');
    expect((err.cause as Error).message).toMatch(/Unknown role 'wizard'/);
  });

  it('nothing is cached: a policy change applies to the very next call', async () => {
    const { calls, resolveProvider } = countingRbac();
    let roles: Record<string, unknown> = { user: { sandbox: { allow: '*' } } };
    const options: SandboxGateOptions = { config: () => withRoles(roles), resolveProvider };
    expect((await authorizeSandboxExecution(as('user'), options)).status).toBe('allowed');
    roles = { user: { sandbox: { allow: [] } } };
    await denial(authorizeSandboxExecution(as('user'), options));
    roles = { user: {} };
    expect((await authorizeSandboxExecution(as('user'), options)).status).toBe('allowed');
    expect(calls).toHaveLength(3);
  });

  it('resolves a new provider for every decision with the default resolver', async () => {
    const instances = new Set<unknown>();
    class Tracking implements AuthorizationProvider {
      constructor() {
        instances.add(this);
      }
      async authorize() {
        return { allowed: true, reason: { code: 'ok', message: '' } };
      }
    }
    const options: SandboxGateOptions = {
      config: rbacConfig({ provider: { use: 'tracking#P', config: {} } }),
      importer: async () => ({ P: Tracking }),
    };
    await authorizeSandboxExecution(as('user'), options);
    await authorizeSandboxExecution(as('user'), options);
    expect(instances.size).toBe(2);
  });
});

describe('authorizeSandboxExecution: provider failures follow fail_closed', () => {
  it('§7.20 authorize raising → SandboxAuthorizationError when fail_closed', async () => {
    const logger = recordingLogger();
    const err = await denial(
      authorizeSandboxExecution(as('user'), {
        config: rbacConfig(),
        resolveProvider: () => failingProvider(),
        logger,
      }),
    );
    expect(err.role).toBe('user');
    expect((err.cause as Error).message).toBe('policy backend down');
    expect(logger.lines).toEqual([
      expect.objectContaining({ level: 'warn', msg: expect.stringMatching(/denying/) as string }),
    ]);
  });

  it('§7.20 authorize raising → allowed with a warning when fail-open', async () => {
    const logger = recordingLogger();
    const outcome = await authorizeSandboxExecution(as('user'), {
      config: rbacConfig({ failClosed: false }),
      resolveProvider: () => failingProvider(),
      logger,
    });
    expect(outcome).toMatchObject({ status: 'failed-open' });
    expect(logger.lines).toEqual([
      expect.objectContaining({ level: 'warn', msg: expect.stringMatching(/allowing/) as string }),
    ]);
  });

  it('§7.21 provider resolution raising → error (no role) when fail_closed, allowed when fail-open', async () => {
    const broken = { use: 'missing-authz-package#Provider', config: {} };
    const importer = async () => {
      throw new Error('Cannot find package');
    };
    const err = await denial(
      authorizeSandboxExecution(as('user'), {
        config: rbacConfig({ provider: broken }),
        importer,
        logger: recordingLogger(),
      }),
    );
    expect(err.role).toBeUndefined();
    expect(err.message).toBe('Sandbox execution is not permitted for your role');
    expect(err.cause).toBeInstanceOf(ProviderLoadError);

    const outcome = await authorizeSandboxExecution(as('user'), {
      config: rbacConfig({ provider: broken, failClosed: false }),
      importer,
      logger: recordingLogger(),
    });
    expect(outcome.status).toBe('failed-open');
  });

  it('§7.21 an invalid RBAC config (resolution error) follows fail_closed too', async () => {
    const config = withRoles({ user: { tool: {} } });
    await denial(authorizeSandboxExecution(as('user'), { config, logger: recordingLogger() }));
    const open = await authorizeSandboxExecution(as('user'), {
      config: { ...config, failClosed: false },
      logger: recordingLogger(),
    });
    expect(open.status).toBe('failed-open');
  });

  it('fails closed when failClosed is absent from a hand-built config (a provider error denies)', async () => {
    const { failClosed: _omitted, ...withoutFailClosed } = rbacConfig();
    const config = withoutFailClosed as unknown as AuthorizationConfig;
    expect('failClosed' in config).toBe(false);
    await denial(
      authorizeSandboxExecution(as('user'), {
        config,
        resolveProvider: () => {
          throw new Error('provider unavailable');
        },
        logger: recordingLogger(),
      }),
    );
  });

  it('a resolver that returns no provider is a resolution error', async () => {
    await denial(
      authorizeSandboxExecution(as('user'), {
        config: rbacConfig(),
        resolveProvider: () => undefined,
        logger: recordingLogger(),
      }),
    );
  });

  it.each([
    ['undefined', undefined],
    ['a string allowed', { allowed: 'yes', reason: { code: 'x', message: '' } }],
    ['null', null],
  ])('a malformed decision (%s) is a provider error, never an allow', async (_l, decision) => {
    const provider: AuthorizationProvider = {
      authorize: async () => decision as never,
    };
    await denial(
      authorizeSandboxExecution(as('user'), {
        config: rbacConfig(),
        resolveProvider: () => provider,
        logger: recordingLogger(),
      }),
    );
    const open = await authorizeSandboxExecution(as('user'), {
      config: rbacConfig({ failClosed: false }),
      resolveProvider: () => provider,
      logger: recordingLogger(),
    });
    expect(open.status).toBe('failed-open');
  });

  it('a SandboxAuthorizationError thrown by the provider is a deny even when fail-open', async () => {
    const thrown = new SandboxAuthorizationError(undefined, 'custom');
    const err = await denial(
      authorizeSandboxExecution(as('user'), {
        config: rbacConfig({ failClosed: false }),
        resolveProvider: () => ({ authorize: () => Promise.reject(thrown) }),
      }),
    );
    expect(err).toBe(thrown);
  });
});

describe('withSandboxAuthorizationScope', () => {
  it('one decision for every gate call inside the scope; the next scope decides again', async () => {
    const { calls, resolveProvider } = countingRbac();
    const options: SandboxGateOptions = { config: rbacConfig(), resolveProvider };
    await withSandboxAuthorizationScope(async () => {
      await authorizeSandboxExecution(as('admin'), options);
      await authorizeSandboxExecution(as('admin'), options);
      await withSandboxAuthorizationScope(() => authorizeSandboxExecution(as('admin'), options));
    });
    expect(calls).toHaveLength(1);
    await withSandboxAuthorizationScope(() => authorizeSandboxExecution(as('admin'), options));
    expect(calls).toHaveLength(2);
  });

  it('concurrent gate calls inside one scope share the pending decision', async () => {
    const { calls, resolveProvider } = countingRbac();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const options: SandboxGateOptions = {
      config: async () => {
        await gate;
        return rbacConfig();
      },
      resolveProvider,
    };
    await withSandboxAuthorizationScope(async () => {
      const all = Promise.all([
        authorizeSandboxExecution(as('admin'), options),
        authorizeSandboxExecution(as('admin'), options),
        authorizeSandboxExecution(as('admin'), options),
      ]);
      release();
      const outcomes = await all;
      expect(new Set(outcomes).size).toBe(1);
    });
    expect(calls).toHaveLength(1);
  });

  it('a deny is not remembered: each touch asks again and fails again', async () => {
    const { calls, resolveProvider } = countingRbac();
    const options: SandboxGateOptions = { config: rbacConfig(), resolveProvider };
    await withSandboxAuthorizationScope(async () => {
      await denial(authorizeSandboxExecution(as('guest'), options));
      await denial(authorizeSandboxExecution(as('guest'), options));
    });
    expect(calls).toHaveLength(2);
  });

  it('outside a scope every call decides', async () => {
    const { calls, resolveProvider } = countingRbac();
    const options: SandboxGateOptions = { config: rbacConfig(), resolveProvider };
    await authorizeSandboxExecution(as('admin'), options);
    await authorizeSandboxExecution(as('admin'), options);
    expect(calls).toHaveLength(2);
  });
});
