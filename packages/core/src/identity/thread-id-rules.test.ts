import { describe, expect, it } from 'vitest';
import { InvalidArgumentError, isSbxError } from '../errors/errors.js';
import { threadLayout } from '../paths/virtual-paths-layout.js';
import {
  MAX_ID_LENGTH,
  assertSafePathSegment,
  assertValidThreadIdentity,
  isValidThreadIdentity,
} from './thread-id-rules.js';

const colon = String.fromCharCode(58);
const BAD_IDS: readonly unknown[] = [
  '',
  '.',
  '..',
  'a/b',
  'a\\b',
  `a${String.fromCharCode(0)}b`,
  `a${String.fromCharCode(10)}b`,
  `a${String.fromCharCode(127)}b`,
  `a${colon}b`,
  colon,
  'x'.repeat(MAX_ID_LENGTH + 1),
  42,
  null,
];

describe('the id rule', () => {
  it('accepts ordinary ids of both kinds, up to 255 characters', () => {
    for (const id of ['alice', 'thread-1', 'a.b_c-d', '550e8400-e29b-41d4', 'x'.repeat(255)]) {
      expect(assertSafePathSegment('userId', id)).toBe(id);
      expect(assertSafePathSegment('threadId', id)).toBe(id);
      expect(isValidThreadIdentity({ userId: id, threadId: id })).toBe(true);
    }
  });

  it('refuses every bad id for users and threads alike, typed and naming the field', () => {
    for (const bad of BAD_IDS) {
      for (const kind of ['userId', 'threadId'] as const) {
        let error: unknown;
        try {
          assertSafePathSegment(kind, bad);
        } catch (e) {
          error = e;
        }
        expect(error, `${kind} ${JSON.stringify(bad)}`).toBeInstanceOf(InvalidArgumentError);
        expect(isSbxError(error) && error.details.field).toBe(kind);
      }
    }
  });

  it('attack: a ":" in either id is refused, so ("acme", "bob:notes") and ("acme:bob", "notes") never meet', () => {
    const a = { userId: 'acme', threadId: `bob${colon}notes` };
    const b = { userId: `acme${colon}bob`, threadId: 'notes' };
    for (const identity of [a, b]) {
      expect(() => assertValidThreadIdentity(identity)).toThrow(InvalidArgumentError);
      expect(isValidThreadIdentity(identity)).toBe(false);
    }
  });

  it('an absent or empty user is the default user and not checked; the thread always is', () => {
    expect(() => assertValidThreadIdentity({ threadId: 't' })).not.toThrow();
    expect(() => assertValidThreadIdentity({ userId: '', threadId: 't' })).not.toThrow();
    expect(() => assertValidThreadIdentity({ userId: null, threadId: 't' })).not.toThrow();
    expect(() => assertValidThreadIdentity({ threadId: '' })).toThrow(InvalidArgumentError);
    expect(() => assertValidThreadIdentity({ threadId: undefined })).toThrow(InvalidArgumentError);
  });

  it('is the rule host directories use: the thread layout refuses what the identity refuses', () => {
    for (const bad of BAD_IDS.filter((b): b is string => typeof b === 'string')) {
      expect(() => threadLayout('/base', 'u', bad)).toThrow(InvalidArgumentError);
      expect(() => threadLayout('/base', bad, 't')).toThrow(InvalidArgumentError);
    }
  });
});
