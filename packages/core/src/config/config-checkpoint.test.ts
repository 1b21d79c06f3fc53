import { describe, expect, it } from 'vitest';
import { isSbxError } from '../errors/errors.js';
import { parseSandboxConfig } from './config-loader.js';

function issuesOf(input: Record<string, unknown>): string[] {
  try {
    parseSandboxConfig({ use: '@sbx/local', ...input }, { env: {} });
  } catch (err) {
    if (isSbxError(err, 'CONFIG_INVALID')) {
      return (err as unknown as { issues: { path: string }[] }).issues.map((i) => i.path);
    }
    throw err;
  }
  return [];
}

describe('sandbox.checkpoint', () => {
  it('reads the limits and the snapshot life', () => {
    const config = parseSandboxConfig(
      {
        use: '@sbx/local',
        checkpoint: { max_bytes: 4096, max_entries: 10, snapshot_ttl_seconds: 3600 },
      },
      { env: {} },
    );
    expect(config.checkpoint).toEqual({
      maxTotalBytes: 4096,
      maxEntries: 10,
      snapshotTtlSeconds: 3600,
    });
  });

  it('refuses a bad value with its key path', () => {
    expect(issuesOf({ checkpoint: { max_bytes: 0 } })).toEqual(['sandbox.checkpoint.max_bytes']);
    expect(issuesOf({ checkpoint: { max_entries: 1.5 } })).toEqual([
      'sandbox.checkpoint.max_entries',
    ]);
    expect(issuesOf({ checkpoint: { snapshot_ttl_seconds: -1 } })).toEqual([
      'sandbox.checkpoint.snapshot_ttl_seconds',
    ]);
    expect(issuesOf({ checkpoint: { max_bytes: 2 ** 41 } })).toEqual([
      'sandbox.checkpoint.max_bytes',
    ]);
    expect(issuesOf({ checkpoint: { max_files: 3 } })).toEqual(['sandbox.checkpoint.max_files']);
  });
});
