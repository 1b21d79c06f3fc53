import { describe, expect, it } from 'vitest';
import {
  LOCAL_HOST_BASH_DISABLED_MESSAGE,
  allowsHostBash,
  isLocalProviderSpecifier,
  usesLocalSandboxProvider,
} from './host-bash.js';

describe('host bash gate', () => {
  it('recognises the local provider in every specifier form', () => {
    for (const use of ['@sbx/local', '@sbx/local#LocalSandboxProvider', '@sbx/local#default']) {
      expect(isLocalProviderSpecifier(use), use).toBe(true);
    }
    for (const use of ['@sbx/aio', '@sbx/e2b#E2BSandboxProvider', '@sbx/localish', 'my-local']) {
      expect(isLocalProviderSpecifier(use), use).toBe(false);
    }
  });

  it('no sandbox section → false; non-local provider → true; local → allowHostBash (default false)', () => {
    expect(allowsHostBash(undefined)).toBe(false);
    expect(allowsHostBash(null)).toBe(false);
    expect(allowsHostBash({ use: '@sbx/aio' })).toBe(true);
    expect(allowsHostBash({ use: '@sbx/aio', allowHostBash: false })).toBe(true);
    expect(allowsHostBash({ use: '@sbx/local' })).toBe(false);
    expect(allowsHostBash({ use: '@sbx/local', allowHostBash: true })).toBe(true);
  });

  it('fails closed when `use` is missing', () => {
    expect(usesLocalSandboxProvider({})).toBe(true);
    expect(allowsHostBash({})).toBe(false);
  });

  it('§10.5.65 the disabled message names the reason', () => {
    expect(LOCAL_HOST_BASH_DISABLED_MESSAGE).toMatch(/^Host bash execution is disabled/);
    expect(LOCAL_HOST_BASH_DISABLED_MESSAGE).toContain('not a secure sandbox boundary');
  });
});
