import { describe, expect, it } from 'vitest';
import { SandboxIdentityCollisionError } from '../errors/errors.js';
import {
  assertSameThreadIdentity,
  describeThreadIdentity,
  sameThreadIdentity,
} from './thread-identity.js';

const alice = { userId: 'alice', threadId: 't1' };

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('thread identity', () => {
  it('is the same only when user and thread both match', () => {
    expect(sameThreadIdentity(alice, { userId: 'alice', threadId: 't1' })).toBe(true);
    expect(sameThreadIdentity(alice, { userId: 'bob', threadId: 't1' })).toBe(false);
    expect(sameThreadIdentity(alice, { userId: 'alice', threadId: 't2' })).toBe(false);
  });

  it('is described as (user, thread), or by the caller’s name for an unknown one', () => {
    expect(describeThreadIdentity(alice, 'an adopted box')).toBe('(alice, t1)');
    expect(describeThreadIdentity(undefined, 'an adopted box')).toBe('an adopted box');
  });

  it('passes for the same known identity', () => {
    expect(() =>
      assertSameThreadIdentity('id', alice, { ...alice }, 'an anonymous sandbox'),
    ).not.toThrow();
  });

  it('refuses another identity, naming both', () => {
    const err = thrown(() =>
      assertSameThreadIdentity('0123', alice, { userId: 'bob', threadId: 't1' }, 'unknown'),
    );
    expect(err).toBeInstanceOf(SandboxIdentityCollisionError);
    expect((err as SandboxIdentityCollisionError).sandboxId).toBe('0123');
    expect((err as Error).message).toBe(
      'sandbox ID collision for 0123: tracked identity is (alice, t1), requested identity is (bob, t1)',
    );
  });

  it('refuses when either side is unknown', () => {
    for (const [tracked, requested] of [
      [undefined, alice],
      [alice, undefined],
      [undefined, undefined],
    ] as const) {
      const err = thrown(() =>
        assertSameThreadIdentity('0123', tracked, requested, 'an anonymous sandbox'),
      );
      expect(err).toBeInstanceOf(SandboxIdentityCollisionError);
      expect((err as Error).message).toContain('an anonymous sandbox');
    }
  });
});
