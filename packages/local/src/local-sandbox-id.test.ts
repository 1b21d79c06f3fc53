import { InvalidArgumentError } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import { localSandboxId, localSandboxIdMode } from './local-sandbox-id.js';

describe('local sandbox ids', () => {
  it('attack: ("acme", "bob:x") and ("acme:bob", "x") cannot meet under one id: both are refused', () => {
    // Built at run time: both spell local:acme:bob:x.
    const colon = String.fromCharCode(58);
    for (const [userId, threadId] of [
      ['acme', `bob${colon}x`],
      [`acme${colon}bob`, 'x'],
    ] as const) {
      for (const mode of ['shared', 'policy'] as const) {
        expect(() => localSandboxId(userId, threadId, mode)).toThrow(InvalidArgumentError);
      }
    }
  });

  it('keeps the id format for ids that pass, one id per (user, thread, view)', () => {
    expect(localSandboxId('alice', 't-1', 'shared')).toBe('local:alice:t-1');
    expect(localSandboxId('alice', 't-1', 'policy')).toBe('local:alice/policy:t-1');
    expect(() => localSandboxId('a/policy', 't', 'shared')).toThrow(InvalidArgumentError);
  });

  it('a network key makes an id of its own, still one of the thread', () => {
    const key = '0123456789abcdef';
    expect(localSandboxId('alice', 't-1', 'shared', key)).toBe(`local:alice/net-${key}:t-1`);
    expect(localSandboxId('alice', 't-1', 'policy', key)).toBe(`local:alice/policy/net-${key}:t-1`);
    expect(localSandboxIdMode(`local:alice/net-${key}:t-1`, 'alice', 't-1')).toBe('shared');
    expect(localSandboxIdMode(`local:alice/policy/net-${key}:t-1`, 'alice', 't-1')).toBe('policy');
    expect(localSandboxIdMode('local:alice:t-1', 'alice', 't-1')).toBe('shared');
  });

  it("attack: an id spelled around the network part is not the thread's", () => {
    const key = '0123456789abcdef';
    for (const forged of [
      `local:alice/net-${key.toUpperCase()}:t-1`,
      `local:alice/net-${key}/policy:t-1`,
      `local:alice/net-:t-1`,
      `local:alice/net-${key}x:t-1`,
      `local:alice/net-${key}:t-2`,
      `local:bob/net-${key}:t-1`,
    ]) {
      expect(localSandboxIdMode(forged, 'alice', 't-1')).toBeUndefined();
    }
    expect(() => localSandboxId('alice', 't-1', 'shared', 'xyz')).toThrow(TypeError);
  });
});
