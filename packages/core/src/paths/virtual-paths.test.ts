import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors/errors.js';
import {
  hasTraversalSegment,
  isUnderVirtualPrefix,
  normalizeVirtualRoot,
} from './virtual-paths.js';
import {
  assertSafePathSegment,
  sharedSkillsViewPath,
  threadLayout,
} from './virtual-paths-layout.js';

describe('virtual path prefixes', () => {
  it('matches prefixes at segment boundaries only', () => {
    expect(isUnderVirtualPrefix('/mnt/skills', '/mnt/skills')).toBe(true);
    expect(isUnderVirtualPrefix('/mnt/skills/public/x', '/mnt/skills/')).toBe(true);
    expect(isUnderVirtualPrefix('/mnt/skills-extra/x', '/mnt/skills')).toBe(false);
    expect(isUnderVirtualPrefix('/mnt/skillsx', '/mnt/skills')).toBe(false);
    expect(isUnderVirtualPrefix('/anything', '/')).toBe(true);
    expect(isUnderVirtualPrefix('relative', '/')).toBe(false);
  });

  it('normalises roots and detects `..` with either separator', () => {
    expect(normalizeVirtualRoot('/mnt/data///')).toBe('/mnt/data');
    expect(normalizeVirtualRoot('///')).toBe('/');
    expect(hasTraversalSegment('/mnt/user-data/../etc')).toBe(true);
    expect(hasTraversalSegment('/mnt/user-data\\..\\etc')).toBe(true);
    expect(hasTraversalSegment('/mnt/user-data/..hidden/x..')).toBe(false);
  });
});

describe('thread layout', () => {
  it('places thread data, ACP workspace and skills views under the base directory', () => {
    const l = threadLayout('/data', 'alice', 't1');
    expect(l.workspacePath).toBe(path.join('/data/users/alice/threads/t1/user-data/workspace'));
    expect(l.uploadsPath).toBe(path.join('/data/users/alice/threads/t1/user-data/uploads'));
    expect(l.outputsPath).toBe(path.join('/data/users/alice/threads/t1/user-data/outputs'));
    expect(l.acpWorkspacePath).toBe(path.join('/data/users/alice/threads/t1/acp-workspace'));
    expect(l.threadSkillsViewPath).toBe(path.join('/data/users/alice/threads/t1/skills_view'));
    expect(sharedSkillsViewPath('/data', 'alice', 'public')).toBe('/data/skills_view/public');
    expect(sharedSkillsViewPath('/data', 'alice', 'custom')).toBe(
      '/data/users/alice/skills_view/custom',
    );
  });

  it.each(['', '.', '..', 'a/b', 'a\\b', 'a\0b', 'a\nb', 'x'.repeat(256)])(
    'rejects the unsafe id %j with InvalidArgumentError',
    (bad) => {
      expect(() => threadLayout('/data', 'u', bad)).toThrow(InvalidArgumentError);
      expect(() => threadLayout('/data', bad, 't')).toThrow(InvalidArgumentError);
    },
  );

  it('rejects a colon in user and thread ids (identities are joined with colons)', () => {
    expect(() => assertSafePathSegment('userId', 'a:b')).toThrow(/must not contain ':'/);
    expect(() => assertSafePathSegment('threadId', 'a:b')).toThrow(/must not contain ':'/);
    expect(assertSafePathSegment('userId', 'user@example.com')).toBe('user@example.com');
  });
});
