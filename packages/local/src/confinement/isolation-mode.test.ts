import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '@sbx/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalSandboxProvider } from '../local-sandbox-provider.js';
import { validateConfigBlock } from '../local-config-block.js';
import { diagnoseBwrapFailure, parseBwrapVersion, type ConfinementProbe } from './bwrap-probe.js';

const unavailable: ConfinementProbe = {
  ok: false,
  cause: 'bubblewrap is not installed',
  fix: 'install it: apt-get install bubblewrap',
};
const available: ConfinementProbe = {
  ok: true,
  bwrap: '/usr/bin/bwrap',
  nsenter: '/usr/bin/nsenter',
  disableUserns: true,
};

function recording(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return {
    warnings,
    debug: () => {},
    info: () => {},
    warn: (msg) => warnings.push(msg),
    error: () => {},
  };
}

describe('isolation: how a provider decides where commands run', () => {
  let baseDir: string;
  beforeAll(async () => {
    baseDir = await mkdtemp(path.join(os.tmpdir(), 'sbx-isolation-'));
  });
  afterAll(async () => {
    await rm(baseDir, { recursive: true, force: true });
  });
  const make = (options: ConstructorParameters<typeof LocalSandboxProvider>[0]) =>
    new LocalSandboxProvider({ baseDir, ...options });

  it('bwrap that cannot start is a typed error naming the cause and the fix', () => {
    const build = () => make({ isolation: 'bwrap', confinementProbe: () => unavailable });
    expect(build).toThrow(
      expect.objectContaining({
        code: 'CONFINEMENT_UNAVAILABLE',
        details: { cause: unavailable.cause, fix: unavailable.fix },
      }),
    );
  });

  it('auto without bubblewrap keeps bash off and says why in one line, never unconfined', async () => {
    const logger = recording();
    const p = make({ confinementProbe: () => unavailable, logger });
    expect(p.commandMode).toMatchObject({ kind: 'off' });
    expect(logger.warnings).toHaveLength(1);
    expect(logger.warnings[0]).toContain(unavailable.cause);
    expect(logger.warnings[0]).toContain(unavailable.fix);
    const sandbox = p.get(await p.acquire({ threadId: 'off' }))!;
    expect(sandbox.allowHostBash).toBe(false);
    await expect(sandbox.executeCommand('true')).rejects.toMatchObject({
      code: 'HOST_BASH_DISABLED',
    });
    expect(p.supportsAgentSkillIsolation).toBe(true);
  });

  it('auto where bubblewrap works confines without allowHostBash, skill isolation on', () => {
    const p = make({ confinementProbe: () => available, logger: recording() });
    expect(p.commandMode).toEqual({ kind: 'confined' });
    expect(p.confined).toBe(true);
    expect(p.supportsAgentSkillIsolation).toBe(true);
  });

  it('auto with allowHostBash is unconfined host bash, explicitly, with a warning', () => {
    const logger = recording();
    const p = make({ allowHostBash: true, confinementProbe: () => available, logger });
    expect(p.commandMode).toEqual({ kind: 'host' });
    expect(p.supportsAgentSkillIsolation).toBe(false);
    expect(logger.warnings.join('\n')).toMatch(/unconfined/);
  });

  it('bwrap with allowHostBash stays confined; the warning says allowHostBash is ignored', () => {
    const logger = recording();
    const p = make({
      isolation: 'bwrap',
      allowHostBash: true,
      confinementProbe: () => available,
      logger,
    });
    expect(p.commandMode).toEqual({ kind: 'confined' });
    expect(logger.warnings.join('\n')).toMatch(/allow_host_bash is ignored/);
  });

  it('none is the behaviour before confinement: host bash only with allowHostBash', () => {
    expect(
      make({ isolation: 'none', confinementProbe: () => available }).commandMode,
    ).toMatchObject({ kind: 'off' });
    expect(
      make({ isolation: 'none', allowHostBash: true, confinementProbe: () => available })
        .commandMode,
    ).toEqual({ kind: 'host' });
  });

  it('sandbox.local.isolation, sandbox_uid and sandbox_gid are checked at their key paths', () => {
    const issues = validateConfigBlock({
      local: { isolation: 'chroot', sandbox_uid: 0, sandbox_gid: -1 },
    } as never);
    expect(issues.map((i) => i.path).sort()).toEqual([
      'sandbox.local.isolation',
      'sandbox.local.sandbox_gid',
      'sandbox.local.sandbox_uid',
    ]);
    expect(
      validateConfigBlock({ local: { isolation: 'bwrap', sandbox_uid: 1000 } } as never),
    ).toEqual([]);
  });
});

describe('the probe names the cause and the fix', () => {
  const sysctl = (values: Record<string, string>) => (file: string) => values[file];

  it('user namespaces disabled', () => {
    const d = diagnoseBwrapFailure(
      'bwrap: No permissions to creating new namespace',
      sysctl({ '/proc/sys/user/max_user_namespaces': '0' }),
    );
    expect(d.fix).toContain('user.max_user_namespaces');
  });

  it("Ubuntu's AppArmor restriction", () => {
    const d = diagnoseBwrapFailure(
      'bwrap: setting up uid map: Permission denied',
      sysctl({ '/proc/sys/kernel/apparmor_restrict_unprivileged_userns': '1' }),
    );
    expect(d.cause).toContain('AppArmor');
    expect(d.fix).toContain('apparmor_restrict_unprivileged_userns');
  });

  it('a container runtime refusing namespaces', () => {
    const d = diagnoseBwrapFailure(
      'bwrap: Creating new namespace failed: Operation not permitted',
      sysctl({}),
    );
    expect(d.cause).toContain('container runtime');
    expect(d.fix).toContain('seccomp=unconfined');
  });

  it('a bubblewrap too old for the features used', () => {
    const d = diagnoseBwrapFailure('bwrap: Unknown option --bind-fd', sysctl({}));
    expect(d.cause).toContain('too old');
  });

  it('reads bubblewrap versions', () => {
    expect(parseBwrapVersion('bubblewrap 0.8.0\n')).toEqual([0, 8, 0]);
    expect(parseBwrapVersion('bubblewrap 0.11')).toEqual([0, 11, 0]);
    expect(parseBwrapVersion('')).toBeUndefined();
  });
});
