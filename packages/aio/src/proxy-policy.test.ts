import { describe, expect, it } from 'vitest';
import { shouldTrustEnvProxy } from './proxy-policy.js';

describe('shouldTrustEnvProxy', () => {
  it.each([
    'http://localhost:8080',
    'http://127.0.0.1:8080',
    'http://[::1]:8080',
    'http://host.docker.internal:8080',
    'http://host.containers.internal:8080',
    'http://k3s:8080',
    'http://10.0.0.8:8080',
  ])('§9.2.26 reaches %s directly (no environment proxy)', (url) => {
    expect(shouldTrustEnvProxy(url)).toBe(false);
  });

  it.each([
    'http://8.8.8.8:8080',
    'http://[2606:4700:4700::1111]:8080',
    'https://sandbox.example.com',
  ])('§9.2.26 sends %s through the environment proxy', (url) => {
    expect(shouldTrustEnvProxy(url)).toBe(true);
  });

  it.each([
    ['http://LOCALHOST.:8080', false],
    ['http://app.localhost', false],
    ['http://provisioner', false],
    ['http://sandbox.:8080', false],
    ['http://172.20.1.2', false],
    ['http://172.32.0.1', true],
    ['http://192.168.1.10', false],
    ['http://169.254.1.1', false],
    ['http://[fe80::1]', false],
    ['http://[fd00::5]', false],
    ['http://[::ffff:10.1.2.3]', false],
    ['http://[::ffff:8.8.4.4]', true],
    ['http://1.1.1.1', true],
  ])('§9.2.26 classifies %s (trust env: %s)', (url, expected) => {
    expect(shouldTrustEnvProxy(url)).toBe(expected);
  });

  it('§1.1 keeps environment proxies for a URL that does not parse or has no host', () => {
    expect(shouldTrustEnvProxy('not a url')).toBe(true);
    expect(shouldTrustEnvProxy('file:///tmp/x')).toBe(true);
  });
});
