import { InvalidArgumentError } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import { localSandboxId } from './local-sandbox-id.js';

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
});
