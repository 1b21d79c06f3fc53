import { InvalidArgumentError } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import { buildPrincipal, describeType, withDefaultRole } from './principal.js';

describe('buildPrincipal', () => {
  it('§7.1 empty context → all identity fields undefined, not internal, no attributes, default role', () => {
    const p = buildPrincipal({}, { defaultRole: 'user' });
    expect(p).toEqual({
      userId: undefined,
      role: 'user',
      oauthProvider: undefined,
      oauthId: undefined,
      channelUserId: undefined,
      isInternal: false,
      attributes: {},
    });
    expect(buildPrincipal(undefined, { defaultRole: 'user' })).toEqual(p);
    expect(buildPrincipal(null, { defaultRole: 'user' })).toEqual(p);
  });

  it('maps every identity key of the context', () => {
    const p = buildPrincipal(
      {
        userId: 'u1',
        userRole: 'admin',
        oauthProvider: 'github',
        oauthId: 'gh-7',
        channelUserId: 'slack:U1',
        isInternal: true,
        authzAttributes: { team: 'red' },
      },
      { defaultRole: 'user' },
    );
    expect(p).toEqual({
      userId: 'u1',
      role: 'admin',
      oauthProvider: 'github',
      oauthId: 'gh-7',
      channelUserId: 'slack:U1',
      isInternal: true,
      attributes: { team: 'red' },
    });
  });

  it.each([
    ['missing', {}],
    ['null', { userRole: null }],
    ['undefined', { userRole: undefined }],
    ['empty', { userRole: '' }],
  ])('§7.2 role %s → defaultRole', (_label, ctx) => {
    expect(buildPrincipal(ctx, { defaultRole: 'user' }).role).toBe('user');
  });

  it('§7.2 an unknown non-empty role is preserved, not replaced by the default', () => {
    expect(buildPrincipal({ userRole: 'wizard' }, { defaultRole: 'user' }).role).toBe('wizard');
  });

  it('without a default role a missing role stays undefined', () => {
    expect(buildPrincipal({}).role).toBeUndefined();
    expect(buildPrincipal({ userRole: '' }, { defaultRole: '' }).role).toBeUndefined();
  });

  it.each([
    [true, true],
    [1, false],
    ['true', false],
    [null, false],
    [undefined, false],
    [{}, false],
  ])('§7.3 isInternal %j → %s (literal true only)', (value, expected) => {
    expect(buildPrincipal({ isInternal: value }).isInternal).toBe(expected);
  });

  it('§7.4 attributes are copied: mutating the input after build has no effect', () => {
    const attrs: Record<string, unknown> = { team: 'red' };
    const p = buildPrincipal({ authzAttributes: attrs });
    attrs.team = 'blue';
    attrs.extra = 1;
    expect(p.attributes).toEqual({ team: 'red' });
    expect(p.attributes).not.toBe(attrs);
    expect(Object.isFrozen(p.attributes)).toBe(true);
  });

  it.each([
    [['a'], 'Array'],
    ['x', 'string'],
    [42, 'number'],
    [new Map([['a', 1]]), 'Map'],
    [new (class Custom {})(), 'Custom'],
  ])('§7.4 non-object attributes %j → InvalidArgumentError naming %s', (value, typeName) => {
    let caught: unknown;
    try {
      buildPrincipal({ authzAttributes: value });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvalidArgumentError);
    expect((caught as Error).message).toBe(
      `authzAttributes must be a plain object, got ${typeName}`,
    );
  });

  it('accepts null-prototype attribute objects', () => {
    const attrs = Object.assign(Object.create(null) as Record<string, unknown>, { a: 1 });
    expect(buildPrincipal({ authzAttributes: attrs }).attributes).toEqual({ a: 1 });
  });

  it('§7.4 the input context is never mutated', () => {
    const ctx = { userRole: '', authzAttributes: { a: 1 }, isInternal: 'true' };
    const snapshot = structuredClone(ctx);
    buildPrincipal(ctx, { defaultRole: 'user' });
    expect(ctx).toEqual(snapshot);
  });

  it('rejects non-string identity fields with a typed error', () => {
    expect(() => buildPrincipal({ userId: 7 })).toThrow(
      new InvalidArgumentError('userId must be a string, got number'),
    );
    expect(() => buildPrincipal({ userRole: ['admin'] })).toThrow(/userRole must be a string/);
  });

  it('returns a frozen principal', () => {
    expect(Object.isFrozen(buildPrincipal({}))).toBe(true);
  });
});

describe('withDefaultRole', () => {
  it('fills only a missing role and keeps the object when nothing changes', () => {
    const anonymous = buildPrincipal({ userId: 'u' });
    const filled = withDefaultRole(anonymous, 'user');
    expect(filled.role).toBe('user');
    expect(filled.userId).toBe('u');
    const admin = buildPrincipal({ userRole: 'admin' });
    expect(withDefaultRole(admin, 'user')).toBe(admin);
  });
});

describe('describeType', () => {
  it('names values like a reader expects', () => {
    expect(describeType(null)).toBe('null');
    expect(describeType(Object.create(null))).toBe('Object');
    expect(describeType(() => 1)).toBe('function');
  });
});
