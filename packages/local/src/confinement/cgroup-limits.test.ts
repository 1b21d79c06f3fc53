import { describe, expect, it } from 'vitest';
import {
  DEFAULT_CONFINEMENT_LIMITS,
  parseByteSize,
  resolveConfinementLimits,
} from './cgroup-limits.js';

describe('confinement limits', () => {
  it('has non-zero defaults and overrides them one by one', () => {
    for (const value of Object.values(DEFAULT_CONFINEMENT_LIMITS)) expect(value).toBeGreaterThan(0);
    expect(resolveConfinementLimits({ pids: 64 })).toEqual({
      ...DEFAULT_CONFINEMENT_LIMITS,
      pids: 64,
    });
  });

  it('refuses values that are not integers within bounds, naming each', () => {
    expect(() =>
      resolveConfinementLimits({ pids: 0, memoryBytes: 1.5, cpuMillicores: Number.NaN }),
    ).toThrow(/pids .*; memoryBytes .*; cpuMillicores/);
    expect(() => resolveConfinementLimits({ tmpBytes: '1G' as unknown as number })).toThrow(
      /tmpBytes/,
    );
    expect(() => resolveConfinementLimits({ pids: 2 ** 40 })).toThrow(
      /pids must be an integer from 8/,
    );
  });

  it('reads sizes as bytes or with binary units, and nothing else', () => {
    expect(parseByteSize(4096)).toBe(4096);
    expect(parseByteSize('512MiB')).toBe(512 * 1024 * 1024);
    expect(parseByteSize('2 GiB')).toBe(2 * 1024 ** 3);
    expect(parseByteSize('1.5g')).toBe(1.5 * 1024 ** 3);
    // Longer than any size is written: refused before the pattern runs.
    expect(parseByteSize(`${'0'.repeat(31)}1M`)).toBeUndefined();
    for (const bad of [
      '',
      '12 parsecs',
      '-1M',
      '1e9',
      'x'.repeat(40),
      1.5,
      {},
      null,
      '1'.repeat(33),
    ]) {
      expect(parseByteSize(bad)).toBeUndefined();
    }
  });
});
