import { PassThrough } from 'node:stream';
import { parseSandboxConfig, type SandboxConfig } from '@sbx/core';
import {
  DEFAULT_CONFINEMENT_LIMITS,
  type ConfinementLimits,
  type ConfinementReport,
} from '@sbx/local';
import { describe, expect, it } from 'vitest';
import { confinementChecks, type ConfinementProber } from './doctor-confinement-checks.js';
import type { ProbeContext } from './doctor-probe.js';

function context(
  local: Record<string, unknown> | undefined,
  platform: NodeJS.Platform = 'linux',
): ProbeContext {
  const config: SandboxConfig = { ...parseSandboxConfig({}, { env: {}, cwd: '/' }), local };
  return {
    io: {
      stdout: new PassThrough(),
      stderr: new PassThrough(),
      stdin: new PassThrough(),
      env: {},
      cwd: '/',
    },
    config,
    findPackage: async () => undefined,
    dockerEndpoint: undefined,
    kvmPath: '/dev/kvm',
    platform,
    arch: 'x64',
    probeSignal: () => new AbortController().signal,
    onProgress: () => {},
    importer: undefined,
  };
}

/** A host without bubblewrap, recording the limits it was asked about. */
function noBwrap(asked: ConfinementLimits[]): ConfinementProber {
  return async ({ limits }): Promise<ConfinementReport> => {
    asked.push(limits);
    return {
      checks: [
        {
          id: 'confinement.bwrap',
          title: 'bubblewrap installed',
          status: 'fail',
          detail: 'no bwrap',
          fix: 'sudo apt install bubblewrap',
        },
        {
          id: 'confinement.userns',
          title: 'user namespaces usable',
          status: 'skip',
          detail: 'bubblewrap is not installed',
        },
        {
          id: 'confinement.cgroups',
          title: 'cgroups for sandbox limits',
          status: 'fail',
          detail: 'none',
          fix: 'Delegate=yes',
        },
        {
          id: 'confinement.limits',
          title: 'limits in force',
          status: 'ok',
          detail: 'pids 64 (not enforced)',
        },
      ],
      bwrap: undefined,
      cgroups: { layout: undefined, notes: [] },
      limits: [],
    };
  };
}

describe('confinementChecks', () => {
  it('requires bubblewrap, namespaces and seccomp only where isolation: bwrap demands them', async () => {
    const demanded = await confinementChecks(context({ isolation: 'bwrap' }), noBwrap([]));
    expect(demanded.map((c) => [c.check.id, c.check.status, c.required])).toEqual([
      ['confinement.bwrap', 'fail', true],
      ['confinement.userns', 'skip', true],
      ['confinement.cgroups', 'fail', false],
      ['confinement.limits', 'ok', false],
    ]);
    const auto = await confinementChecks(context({ isolation: 'auto' }), noBwrap([]));
    expect(auto.every((c) => !c.required)).toBe(true);
  });

  it('asks about the configured limits, the defaults for the rest', async () => {
    const asked: ConfinementLimits[] = [];
    await confinementChecks(context({ limits: { pids: 64, memory: '1GiB' } }), noBwrap(asked));
    expect(asked).toEqual([{ ...DEFAULT_CONFINEMENT_LIMITS, pids: 64, memoryBytes: 1024 ** 3 }]);
  });

  it('shows the defaults when the configured limits are invalid (the config row reports them)', async () => {
    const asked: ConfinementLimits[] = [];
    await confinementChecks(context({ limits: { pids: -1 } }), noBwrap(asked));
    expect(asked).toEqual([DEFAULT_CONFINEMENT_LIMITS]);
  });

  it('says confinement needs Linux elsewhere, failing only a setup that demands it', async () => {
    const mac = await confinementChecks(context(undefined, 'darwin'), noBwrap([]));
    expect(mac).toEqual([
      expect.objectContaining({
        required: false,
        check: expect.objectContaining({ status: 'skip' }),
      }),
    ]);
    const demanded = await confinementChecks(
      context({ isolation: 'bwrap' }, 'darwin'),
      noBwrap([]),
    );
    expect(demanded[0]).toMatchObject({
      required: true,
      check: { status: 'fail', fix: expect.stringContaining('isolation') },
    });
  });

  it('asks as the configured sandbox user', async () => {
    const owners: unknown[] = [];
    const prober: ConfinementProber = async (request) => {
      owners.push(request.owner);
      return noBwrap([])(request);
    };
    await confinementChecks(context({ sandbox_uid: 1234, sandbox_gid: 'x' }), prober);
    expect(owners).toEqual([{ uid: 1234 }]);
  });
});
