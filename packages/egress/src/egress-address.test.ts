import { describe, expect, it } from 'vitest';
import { blockedAddressReason, parseIpLiteral } from './egress-address.js';

describe('blockedAddressReason', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.1', 'private'],
    ['100.64.0.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fd00::1', 'private'],
    ['fe80::1', 'link-local'],
    ['ff02::1', 'multicast'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['64:ff9b::a9fe:a9fe', 'nat64'],
  ])('%s is refused as %s', (address, reason) => {
    expect(blockedAddressReason(address)).toBe(reason);
  });

  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700::1111'])(
    '%s is a public address',
    (address) => expect(blockedAddressReason(address)).toBeUndefined(),
  );
});

describe('parseIpLiteral', () => {
  it.each([
    ['2852039166', '169.254.169.254'],
    ['0xa9fea9fe', '169.254.169.254'],
    ['0251.0376.0251.0376', '169.254.169.254'],
    ['169.254.43518', '169.254.169.254'],
    ['0x7f.1', '127.0.0.1'],
    ['[::FFFF:127.0.0.1]', '::ffff:127.0.0.1'],
    ['10.0.0.1', '10.0.0.1'],
  ])('reads %s as %s', (literal, address) => {
    expect(parseIpLiteral(literal)).toBe(address);
  });

  it.each([
    'example.com',
    'cafe.face',
    '1.2.3.4.5',
    '256.1.1.1',
    '4294967296',
    '[nope]',
    '08.1.1.1',
  ])('%s is no IP literal', (host) => expect(parseIpLiteral(host)).toBeUndefined());
});
