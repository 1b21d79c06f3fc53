import { describe, expect, it } from 'vitest';
import { keyLayout } from './key-layout.js';

describe('keyLayout', () => {
  it('defaults to sbx:sandbox:owner:<id> and sbx:e2b-capacity', () => {
    const k = keyLayout();
    expect(k.leaseKey('0123456789abcdef')).toBe('sbx:sandbox:owner:0123456789abcdef');
    expect(k.capacityKey).toBe('sbx:e2b-capacity');
  });

  it('namespaces leases under a custom prefix and strips trailing colons', () => {
    const k = keyLayout({ keyPrefix: 'tenant-a::' });
    expect(k.prefix).toBe('tenant-a');
    expect(k.leaseKey('x')).toBe('tenant-a:sandbox:owner:x');
    expect(k.capacityKey).toBe('tenant-a:e2b-capacity');
  });

  it("a prefix already ending in :sandbox:owner gives the reference's default keys", () => {
    const k = keyLayout({ keyPrefix: 'deerflow:sandbox:owner' });
    expect(k.leaseKey('0123456789abcdef')).toBe('deerflow:sandbox:owner:0123456789abcdef');
    expect(k.capacityKey).toBe('deerflow:sandbox:owner:e2b-capacity');
  });

  it("compat 'deerflow' applies the reference rule <prefix>:<id> to any prefix", () => {
    expect(keyLayout({ compat: 'deerflow' }).leaseKey('i')).toBe('deerflow:sandbox:owner:i');
    const k = keyLayout({ compat: 'deerflow', keyPrefix: 'myapp:' });
    expect(k.leaseKey('i')).toBe('myapp:i');
    expect(k.capacityKey).toBe('myapp:e2b-capacity');
  });

  it('rejects an empty prefix and an unknown compat mode', () => {
    expect(() => keyLayout({ keyPrefix: ':' })).toThrow(/keyPrefix/);
    expect(() => keyLayout({ compat: 'other' as 'deerflow' })).toThrow(/compat/);
  });
});
