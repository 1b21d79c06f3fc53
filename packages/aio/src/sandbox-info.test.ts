import { describe, expect, it } from 'vitest';
import {
  parseDockerTimestamp,
  sandboxInfoFromRecord,
  sandboxInfoToRecord,
} from './sandbox-info.js';

describe('SandboxInfo records', () => {
  it('§3 round-trips the five reference keys and accepts base_url as a legacy alias', () => {
    const info = { sandboxId: 'a', sandboxUrl: 'http://x:1', containerName: 'p-a', createdAt: 5 };
    expect(sandboxInfoToRecord(info)).toEqual({
      sandbox_id: 'a',
      sandbox_url: 'http://x:1',
      container_name: 'p-a',
      container_id: null,
      created_at: 5,
    });
    expect(sandboxInfoFromRecord({ sandbox_id: 'a', base_url: 'http://y:2' }, () => 9000)).toEqual({
      sandboxId: 'a',
      sandboxUrl: 'http://y:2',
      createdAt: 9,
    });
  });

  it('rejects a record without id or url', () => {
    expect(() => sandboxInfoFromRecord({ sandbox_id: 'a' })).toThrow(/sandbox_url/);
  });
});

describe('parseDockerTimestamp', () => {
  it('§9.3.46 reads nine-digit fractions and whole seconds; empty or garbage is 0', () => {
    const expected = Date.UTC(2024, 4, 1, 10, 20, 30) / 1000;
    expect(parseDockerTimestamp('2024-05-01T10:20:30.123456789Z')).toBeCloseTo(expected + 0.123, 3);
    expect(parseDockerTimestamp('2024-05-01T10:20:30Z')).toBe(expected);
    expect(parseDockerTimestamp('')).toBe(0);
    expect(parseDockerTimestamp('garbage')).toBe(0);
    expect(parseDockerTimestamp(undefined)).toBe(0);
  });
});
