import { describe, expect, it } from 'vitest';
import {
  LOCAL_HOST_BASH_DISABLED_MESSAGE,
  isHostBashAllowed,
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
    expect(isHostBashAllowed(undefined)).toBe(false);
    expect(isHostBashAllowed(null)).toBe(false);
    expect(isHostBashAllowed({ use: '@sbx/aio' })).toBe(true);
    expect(isHostBashAllowed({ use: '@sbx/aio', allowHostBash: false })).toBe(true);
    expect(isHostBashAllowed({ use: '@sbx/local' })).toBe(false);
    expect(isHostBashAllowed({ use: '@sbx/local', allowHostBash: true })).toBe(true);
  });

  it('fails closed when `use` is missing', () => {
    expect(usesLocalSandboxProvider({})).toBe(true);
    expect(isHostBashAllowed({})).toBe(false);
  });

  it('§10.5.65 the disabled message names the reason', () => {
    expect(LOCAL_HOST_BASH_DISABLED_MESSAGE).toMatch(/^Host bash execution is disabled/);
    expect(LOCAL_HOST_BASH_DISABLED_MESSAGE).toContain('not a secure sandbox boundary');
  });
});
