import type { ConfigIssue } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFINEMENT_LIMITS } from './cgroup-limits.js';
import { resolveLocalBlock, validateConfigBlock } from '../local-config-block.js';
import { limitsUnknownKeyIssues, resolveLimitsBlock } from './cgroup-limits-config.js';

function resolve(block: unknown): { limits: unknown; issues: ConfigIssue[] } {
  const issues: ConfigIssue[] = [];
  return { limits: resolveLimitsBlock(block, issues), issues };
}

describe('sandbox.local.limits', () => {
  it('defaults every limit, and reads each configured one in its unit', () => {
    expect(resolve(undefined)).toEqual({ limits: DEFAULT_CONFINEMENT_LIMITS, issues: [] });
    expect(
      resolve({ pids: 128, memory: '1GiB', cpu: 0.5, tmp_size: '64MiB', file_size: 1048576 }),
    ).toEqual({
      limits: {
        pids: 128,
        memoryBytes: 1024 ** 3,
        cpuMillicores: 500,
        tmpBytes: 64 * 1024 ** 2,
        fileSizeBytes: 1048576,
      },
      issues: [],
    });
  });

  it('reports every bad value at its key path', () => {
    const { issues } = resolve({
      pids: 0,
      memory: '2 parsecs',
      cpu: '1',
      tmp_size: -5,
      file_size: 1.5,
    });
    expect(issues.map((i) => i.path)).toEqual([
      'sandbox.local.limits.pids',
      'sandbox.local.limits.memory',
      'sandbox.local.limits.cpu',
      'sandbox.local.limits.tmp_size',
      'sandbox.local.limits.file_size',
    ]);
    expect(issues[0]?.message).toBe('must be an integer from 8 to 4194304, got 0');
    expect(issues[1]?.message).toMatch(/a size \(bytes, or e.g. "512MiB", "2GiB"\)/);
  });

  it('refuses a limits value that is no mapping', () => {
    expect(resolve(['pids']).issues).toEqual([
      {
        path: 'sandbox.local.limits',
        message: 'must be a mapping of pids, memory, cpu, tmp_size, file_size',
      },
    ]);
  });

  it('names unknown keys with a suggestion', () => {
    expect(limitsUnknownKeyIssues({ memroy: '1G', pids: 10 })).toEqual([
      { path: 'sandbox.local.limits.memroy', message: 'unknown key (did you mean "memory"?)' },
    ]);
  });

  it('is part of sandbox.local: the provider reads it, sbx config validate checks it', () => {
    expect(resolveLocalBlock({ limits: { pids: 99 } }).limits).toEqual({
      ...DEFAULT_CONFINEMENT_LIMITS,
      pids: 99,
    });
    expect(resolveLocalBlock(undefined).limits).toEqual(DEFAULT_CONFINEMENT_LIMITS);
    expect(() => resolveLocalBlock({ limits: { memory: 'lots' } })).toThrow(
      /sandbox.local.limits.memory/,
    );
    expect(validateConfigBlock({ local: { limits: { cpus: 2, pids: 1 } } } as never)).toEqual([
      { path: 'sandbox.local.limits.cpus', message: 'unknown key (did you mean "cpu"?)' },
      { path: 'sandbox.local.limits.pids', message: 'must be an integer from 8 to 4194304, got 1' },
    ]);
  });
});
