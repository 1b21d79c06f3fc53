import { describe, expect, it } from 'vitest';
import { listSandboxConfigKeys, sandboxConfigJsonSchema } from './config-reference.js';

describe('listSandboxConfigKeys', () => {
  const keys = listSandboxConfigKeys();
  const byPath = new Map(keys.map((k) => [k.path, k]));

  it('describes every key (a key without a description would leave a hole in the reference)', () => {
    const undocumented = keys.filter((k) => k.description.trim() === '').map((k) => k.path);
    expect(undocumented).toEqual([]);
  });

  it('lists nested keys with snake_case paths, types, defaults and bounds', () => {
    expect(byPath.get('sandbox.ownership.ttl_multiplier')).toMatchObject({
      type: 'number',
      hasDefault: true,
      default: 4,
      constraints: ['>= 2'],
      required: false,
    });
    expect(byPath.get('sandbox.ownership.renewal_interval_seconds')).toMatchObject({
      default: 30,
      constraints: ['> 0', '<= 2147483'],
    });
    expect(byPath.get('sandbox.search_timeout_seconds')).toMatchObject({
      default: 10,
      constraints: ['> 0', '<= 2147483'],
    });
    expect(byPath.get('sandbox.ownership.key_prefix')?.default).toBe('sbx');
    expect(byPath.get('sandbox.overflow_policy')?.type).toBe('"wait" | "reject" | "burst"');
    expect(byPath.get('sandbox.port')).toMatchObject({
      type: 'integer',
      constraints: ['>= 1', '<= 65535'],
    });
    expect(byPath.get('sandbox.use')?.default).toBe('@sbx/local');
    expect(byPath.get('sandbox.tools.glob.max_results')?.default).toBe(200);
    expect(byPath.get('sandbox.skills.container_path')?.default).toBe('/mnt/skills');
  });

  it('lists list items with [] and marks their required keys', () => {
    expect(byPath.get('sandbox.mounts')?.type).toBe('list of mappings');
    expect(byPath.get('sandbox.mounts[].host_path')?.required).toBe(true);
    expect(byPath.get('sandbox.mounts[].read_only')).toMatchObject({
      required: false,
      default: false,
    });
  });

  it('marks the open provider and authorization blocks', () => {
    for (const b of [
      'authorization',
      'local',
      'aio',
      'e2b',
      'boxlite',
      'tenki',
      'opensandbox',
      'provider_options',
    ]) {
      expect(byPath.get(`sandbox.${b}`)).toMatchObject({ open: true, type: 'open mapping' });
    }
    expect(byPath.get('sandbox.environment')).toMatchObject({
      open: false,
      type: 'map of string | number | boolean',
    });
  });
});

describe('sandboxConfigJsonSchema', () => {
  it('is a strict JSON Schema of the snake_case section', () => {
    const schema = sandboxConfigJsonSchema() as {
      additionalProperties?: unknown;
      properties?: Record<string, unknown>;
    };
    expect(schema.additionalProperties).toBe(false);
    expect(Object.keys(schema.properties ?? {})).toContain('bash_command_timeout');
  });
});

describe('sandbox.checkpoint', () => {
  it("defaults to today's checkpoint limits and no expiry", () => {
    const byPath = new Map(listSandboxConfigKeys().map((k) => [k.path, k]));
    expect(byPath.get('sandbox.checkpoint.max_bytes')?.default).toBe(1024 ** 3);
    expect(byPath.get('sandbox.checkpoint.max_entries')?.default).toBe(100_000);
    expect(byPath.get('sandbox.checkpoint.snapshot_ttl_seconds')?.default).toBe(0);
  });
});
