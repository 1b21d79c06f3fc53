import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors/errors.js';
import { SPEC_CEILINGS } from '../contract/sandbox-spec-bounds.js';
import { parseSandboxConfig } from './config-loader.js';
import { MAX_TIMER_SECONDS } from './config-schema.js';

const withSpec = (spec: Record<string, unknown>) => parseSandboxConfig({ sandbox: { spec } });

describe('sandbox.spec bounds in the configuration', () => {
  it('absent maxima stay absent: the spec check applies the hardened defaults', () => {
    const policy = withSpec({}).specPolicy;
    expect(policy.maxPids).toBeUndefined();
    expect(policy.maxMemoryMb).toBeUndefined();
  });

  it.each([
    ['max_pids', 2 ** 31],
    ['max_memory_mb', Number(`1e${300}`)],
    ['max_cpus', 10 ** 6],
    ['max_cpus', 0.001],
    ['max_disk_gb', 10 ** 9],
    ['max_timeout_seconds', MAX_TIMER_SECONDS + 1],
  ])('refuses %s = %d past the ceiling with a ConfigError naming the key', (key, value) => {
    let error: unknown;
    try {
      withSpec({ [key]: value });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const paths = new Set((error as ConfigError).issues.map((i) => i.path));
    expect([...paths]).toEqual([`sandbox.spec.${key}`]);
  });

  it('accepts a maximum at the ceiling, and the timer ceiling is the timer limit of every key', () => {
    expect(withSpec({ max_pids: SPEC_CEILINGS.pids }).specPolicy.maxPids).toBe(SPEC_CEILINGS.pids);
    expect(SPEC_CEILINGS.timeoutSeconds).toBe(MAX_TIMER_SECONDS);
  });
});
