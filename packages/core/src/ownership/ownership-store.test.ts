import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import {
  LeaseValue,
  RenewOutcome,
  createOwnerId,
  leaseTtlMilliseconds,
  leaseTtlSeconds,
} from './ownership-store.js';

describe('LeaseValue', () => {
  it('encodes own:/del: followed by the owner id', () => {
    expect(LeaseValue.own('h:1')).toBe('own:h:1');
    expect(LeaseValue.del('h:1')).toBe('del:h:1');
    expect(LeaseValue.encode({ state: 'del', ownerId: 'x' })).toBe('del:x');
  });

  it('decodes by the first four characters even though owner ids contain colons', () => {
    expect(LeaseValue.decode('own:host:abc')).toEqual({ state: 'own', ownerId: 'host:abc' });
    expect(LeaseValue.decode('del:host:abc')).toEqual({ state: 'del', ownerId: 'host:abc' });
  });

  it('rejects text that is not a lease value', () => {
    for (const raw of ['', 'own:', 'del:', 'own', 'xyz:host:1', 'OWN:host:1']) {
      expect(LeaseValue.decode(raw)).toBeUndefined();
    }
  });
});

describe('leaseTtlSeconds', () => {
  it('is renewal interval x multiplier, 30 x 4 = 120 by default (9.6 #91)', () => {
    expect(leaseTtlSeconds()).toBe(120);
    expect(leaseTtlSeconds({ renewalIntervalSeconds: 30, ttlMultiplier: 4 })).toBe(120);
    expect(leaseTtlSeconds({ renewalIntervalSeconds: 0.5, ttlMultiplier: 2.5 })).toBe(1.25);
  });

  it('default TTL is more than two renewal intervals (9.6 #91)', () => {
    expect(leaseTtlSeconds()).toBeGreaterThan(2 * 30);
  });

  it('rejects a multiplier below 2 and a non-positive interval (9.6 #91)', () => {
    expect(() => leaseTtlSeconds({ ttlMultiplier: 1 })).toThrow(/ttlMultiplier/);
    expect(() => leaseTtlSeconds({ ttlMultiplier: 1.99 })).toThrow(/ttlMultiplier/);
    expect(() => leaseTtlSeconds({ renewalIntervalSeconds: 0 })).toThrow(/renewalIntervalSeconds/);
    expect(() => leaseTtlSeconds({ renewalIntervalSeconds: Number.NaN })).toThrow();
  });

  it('converts to whole milliseconds, never below 1', () => {
    expect(leaseTtlMilliseconds(120)).toBe(120_000);
    expect(leaseTtlMilliseconds(0.0001)).toBe(1);
    expect(leaseTtlMilliseconds(1.2345)).toBe(1234);
    expect(() => leaseTtlMilliseconds(0)).toThrow();
  });
});

describe('createOwnerId', () => {
  it('is <hostname>:<32 hex> and differs per call (9.6 #92)', () => {
    const a = createOwnerId();
    const b = createOwnerId();
    expect(a).not.toBe(b);
    expect(a.startsWith(`${hostname()}:`)).toBe(true);
    expect(a.slice(hostname().length + 1)).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe('RenewOutcome', () => {
  it('has the three outcomes', () => {
    expect(Object.values(RenewOutcome).sort()).toEqual(['LAPSED', 'LOST', 'RENEWED']);
  });
});
