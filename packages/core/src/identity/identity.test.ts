import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors/errors.js';
import {
  SandboxScopeKinds,
  deriveSandboxScopeToken,
  identityScopesFor,
  isValidSandboxId,
  resolveEffectiveUserId,
  sandboxScopeTokenKind,
} from './identity.js';

const VECTORS: ReadonlyArray<[string, string, string]> = [
  ['default', 'alpha', '36c73fb5b104eee4'],
  ['u1', 't1', '8294997b3cb95133'],
  ['user-a', 'thread-1', '87104f52a39b7d12'],
  ['alice', 'thread-a', 'ab4f84c217b80a45'],
  ['user-9721', 'thread-9721', '7f7b984ccf326330'],
  ['user-94361', 'thread-94361', '7f7b984c6fc4f156'],
];

/** Ids that pass the id rule: letters, digits and `._-`, never `.` or `..` alone. */
const idArb = fc.stringMatching(/^[A-Za-z0-9_.-]{1,24}$/).filter((id) => id !== '.' && id !== '..');
const userArb = fc.oneof(idArb, fc.constant(''));

const scopeArb = fc.record({
  kind: fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/),
  value: fc.string(),
});

describe('deriveSandboxScopeToken (base identity)', () => {
  it.each(VECTORS)('§9 / §10.11 test vector (%s, %s) → %s', (userId, threadId, token) => {
    expect(deriveSandboxScopeToken({ userId, threadId })).toBe(token);
  });

  it('§10.11.122 same (user, thread) → same 16-hex id; a different user or thread → a different id', () => {
    const a = deriveSandboxScopeToken({ userId: 'alice', threadId: 't' });
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(deriveSandboxScopeToken({ userId: 'alice', threadId: 't' })).toBe(a);
    expect(deriveSandboxScopeToken({ userId: 'bob', threadId: 't' })).not.toBe(a);
    expect(deriveSandboxScopeToken({ userId: 'alice', threadId: 'u' })).not.toBe(a);
  });

  it('§10.11.123 the known 8-hex colliding pair differs at 16 hex', () => {
    const a = deriveSandboxScopeToken({ userId: 'user-9721', threadId: 'thread-9721' });
    const b = deriveSandboxScopeToken({ userId: 'user-94361', threadId: 'thread-94361' });
    expect(a.slice(0, 8)).toBe(b.slice(0, 8));
    expect(a).not.toBe(b);
  });

  it('§9 resolves an absent or empty user to "default" before hashing', () => {
    const expected = '36c73fb5b104eee4';
    expect(deriveSandboxScopeToken({ threadId: 'alpha' })).toBe(expected);
    expect(deriveSandboxScopeToken({ userId: undefined, threadId: 'alpha' })).toBe(expected);
    expect(deriveSandboxScopeToken({ userId: null, threadId: 'alpha' })).toBe(expected);
    expect(deriveSandboxScopeToken({ userId: '', threadId: 'alpha' })).toBe(expected);
  });

  it('attack: ("acme", "bob:notes") and ("acme:bob", "notes") cannot meet under one token: both are refused', () => {
    // Built at run time: the two spellings hash the same text under the base formula.
    const colon = String.fromCharCode(58);
    const pairs: [string, string][] = [
      ['acme', `bob${colon}notes`],
      [`acme${colon}bob`, 'notes'],
    ];
    for (const [userId, threadId] of pairs) {
      expect(() => deriveSandboxScopeToken({ userId, threadId })).toThrow(InvalidArgumentError);
      expect(() =>
        deriveSandboxScopeToken({
          userId,
          threadId,
          scope: { kind: SandboxScopeKinds.skillsRoot, value: '/opt/skills' },
        }),
      ).toThrow(InvalidArgumentError);
    }
  });

  it('refuses ids that are not one safe path segment, user and thread alike', () => {
    for (const bad of ['.', '..', 'a/b', 'a\\b', 'a\u0000b', 'a\nb', 'x'.repeat(256)]) {
      expect(() => deriveSandboxScopeToken({ userId: 'u', threadId: bad })).toThrow(
        InvalidArgumentError,
      );
      expect(() => deriveSandboxScopeToken({ userId: bad, threadId: 't' })).toThrow(
        InvalidArgumentError,
      );
    }
  });

  it('property: different valid (user, thread) pairs give different base tokens', () => {
    fc.assert(
      fc.property(fc.tuple(userArb, idArb), fc.tuple(userArb, idArb), ([u1, t1], [u2, t2]) => {
        const same = resolveEffectiveUserId(u1) === resolveEffectiveUserId(u2) && t1 === t2;
        const a = deriveSandboxScopeToken({ userId: u1, threadId: t1 });
        const b = deriveSandboxScopeToken({ userId: u2, threadId: t2 });
        expect(a === b).toBe(same);
      }),
    );
  });

  it('an empty scope list is the base identity', () => {
    expect(deriveSandboxScopeToken({ userId: 'u1', threadId: 't1', scope: [] })).toBe(
      '8294997b3cb95133',
    );
  });

  it('rejects an empty thread id', () => {
    expect(() => deriveSandboxScopeToken({ userId: 'u', threadId: '' })).toThrow(
      InvalidArgumentError,
    );
  });
});

describe('deriveSandboxScopeToken (scoped identity)', () => {
  const scope = { kind: SandboxScopeKinds.skillsRoot, value: '/opt/skills' };

  it('is "s" + 16 hex characters and differs from the base token', () => {
    const scoped = deriveSandboxScopeToken({ userId: 'u1', threadId: 't1', scope });
    expect(scoped).toMatch(/^s[0-9a-f]{16}$/);
    expect(scoped).not.toBe('8294997b3cb95133');
    expect(sandboxScopeTokenKind(scoped)).toBe('scoped');
    expect(sandboxScopeTokenKind('8294997b3cb95133')).toBe('base');
    expect(sandboxScopeTokenKind('local:u:t')).toBeUndefined();
  });

  it('is deterministic and independent of scope order', () => {
    const policy = { kind: SandboxScopeKinds.agentSkillPolicy, value: 'thread-projection' };
    const a = deriveSandboxScopeToken({ userId: 'u', threadId: 't', scope: [scope, policy] });
    const b = deriveSandboxScopeToken({ userId: 'u', threadId: 't', scope: [policy, scope] });
    expect(a).toBe(b);
    expect(a).not.toBe(deriveSandboxScopeToken({ userId: 'u', threadId: 't', scope }));
  });

  it('rejects malformed scopes', () => {
    const bad = (s: unknown) => () =>
      deriveSandboxScopeToken({ userId: 'u', threadId: 't', scope: s as never });
    expect(bad({ kind: 'Skills Root', value: 'x' })).toThrow(InvalidArgumentError);
    expect(bad({ kind: '', value: 'x' })).toThrow(InvalidArgumentError);
    expect(bad({ kind: 'skills-root', value: 3 })).toThrow(InvalidArgumentError);
    expect(bad([scope, { ...scope, value: '/other' }])).toThrow(/given twice/);
  });

  it('property: a scoped token never equals the base token of any (user, thread)', () => {
    fc.assert(
      fc.property(
        userArb,
        idArb,
        fc.array(scopeArb, { minLength: 1, maxLength: 3 }),
        userArb,
        idArb,
        (u, t, scopes, u2, t2) => {
          const unique = [...new Map(scopes.map((s) => [s.kind, s])).values()];
          const scoped = deriveSandboxScopeToken({ userId: u, threadId: t, scope: unique });
          const base = deriveSandboxScopeToken({ userId: u2, threadId: t2 });
          expect(scoped).not.toBe(base);
          expect(sandboxScopeTokenKind(scoped)).toBe('scoped');
          expect(sandboxScopeTokenKind(base)).toBe('base');
        },
      ),
    );
  });

  it('property: different (user, thread, scope) inputs give different scoped tokens', () => {
    fc.assert(
      fc.property(
        fc.tuple(userArb, idArb, scopeArb),
        fc.tuple(userArb, idArb, scopeArb),
        ([u1, t1, s1], [u2, t2, s2]) => {
          const same =
            resolveEffectiveUserId(u1) === resolveEffectiveUserId(u2) &&
            t1 === t2 &&
            s1.kind === s2.kind &&
            s1.value === s2.value;
          const a = deriveSandboxScopeToken({ userId: u1, threadId: t1, scope: s1 });
          const b = deriveSandboxScopeToken({ userId: u2, threadId: t2, scope: s2 });
          expect(a === b).toBe(same);
        },
      ),
    );
  });
});

describe('identityScopesFor', () => {
  it('is empty for the default layout, so default identities stay bit-compatible', () => {
    expect(identityScopesFor({})).toEqual([]);
    expect(identityScopesFor({ skillsContainerPath: '/mnt/skills' })).toEqual([]);
    expect(identityScopesFor({ skillsContainerPath: '/mnt/skills/' })).toEqual([]);
  });

  it('folds a custom skills root and an explicit skill policy in', () => {
    expect(
      identityScopesFor({ skillsContainerPath: '/opt/skills', explicitSkillPolicy: true }),
    ).toEqual([
      { kind: 'skills-root', value: '/opt/skills' },
      { kind: 'agent-skill-policy', value: 'thread-projection' },
    ]);
  });
});

describe('resolveEffectiveUserId', () => {
  it('§2.4 falls back to "default" for absent or empty ids', () => {
    expect(resolveEffectiveUserId()).toBe('default');
    expect(resolveEffectiveUserId(null)).toBe('default');
    expect(resolveEffectiveUserId('')).toBe('default');
    expect(resolveEffectiveUserId('alice')).toBe('alice');
  });
});

describe('isValidSandboxId', () => {
  it('accepts derived tokens, local ids and short random ids', () => {
    for (const id of [
      '36c73fb5b104eee4',
      's0123456789abcdef',
      'local',
      'local:alice:thread-1',
      'a1b2c3d4',
    ]) {
      expect(isValidSandboxId(id)).toBe(true);
    }
  });

  it('rejects empty, overlong, path-like and shell-unsafe ids', () => {
    for (const id of [
      '',
      ' x',
      '../x',
      'a/b',
      'a b',
      'a;b',
      '-x',
      'x'.repeat(129),
      42,
      undefined,
    ]) {
      expect(isValidSandboxId(id)).toBe(false);
    }
  });
});
