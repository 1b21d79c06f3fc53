import { BlockList, isIPv4, isIPv6 } from 'node:net';

/**
 * Address classes a sandbox never reaches unless the operator says so: what lies behind the
 * gateway (loopback, private ranges, link-local with the cloud metadata service at
 * 169.254.169.254) and what is not a destination at all. Checked on every address the proxy
 * resolved, never on the name the sandbox sent, so a public name that resolves to 127.0.0.1 (DNS
 * rebinding) is refused the same as the literal.
 */
const BLOCKED: readonly (readonly [string, number, 'ipv4' | 'ipv6', string])[] = [
  ['0.0.0.0', 8, 'ipv4', 'unspecified'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'private'],
  ['169.254.0.0', 16, 'ipv4', 'link-local'],
  ['192.0.0.0', 24, 'ipv4', 'reserved'],
  ['198.18.0.0', 15, 'ipv4', 'reserved'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['fc00::', 7, 'ipv6', 'private'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['ff00::', 8, 'ipv6', 'multicast'],
  // NAT64 and the deprecated IPv4-compatible form reach IPv4 addresses, private ones included.
  ['64:ff9b::', 96, 'ipv6', 'nat64'],
  ['::', 96, 'ipv6', 'ipv4-compatible'],
];

const lists = new Map<string, BlockList>();
for (const [network, prefix, family, reason] of BLOCKED) {
  let list = lists.get(reason);
  if (!list) lists.set(reason, (list = new BlockList()));
  list.addSubnet(network, prefix, family);
}

/** `::ffff:a.b.c.d` (either spelling) as the IPv4 address it is, else `undefined`. */
function mappedIPv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (!hex) return undefined;
  const hi = parseInt(hex[1]!, 16);
  const lo = parseInt(hex[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Why `address` (a normalized IP) is refused, or `undefined` for a public unicast address. */
export function blockedAddressReason(address: string): string | undefined {
  const mapped = isIPv6(address) ? mappedIPv4(address) : undefined;
  if (mapped !== undefined) return blockedAddressReason(mapped) ?? undefined;
  const family = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : undefined;
  if (family === undefined) return 'not-an-address';
  if (family === 'ipv4' && address === '255.255.255.255') return 'broadcast';
  for (const [reason, list] of lists) {
    if (list.check(address, family)) return reason;
  }
  return undefined;
}

function ipv4Part(text: string): number | undefined {
  if (/^0x[0-9a-f]+$/i.test(text)) return parseInt(text.slice(2), 16);
  if (/^0[0-7]+$/.test(text)) return parseInt(text.slice(1), 8);
  if (/^(0|[1-9][0-9]*)$/.test(text)) return Number(text);
  return undefined;
}

/**
 * The IP address a host string names as a resolver or `inet_aton` would read it, normalized
 * (`2130706433`, `0x7f.1`, `0177.0.0.1`, `[::ffff:127.0.0.1]` are all 127.0.0.1), or `undefined`
 * when it is no IP literal. Every such spelling is checked like the canonical one, so a spelling
 * cannot slip a loopback or metadata address past the address check.
 */
export function parseIpLiteral(host: string): string | undefined {
  if (host.startsWith('[') && host.endsWith(']')) {
    const inner = host.slice(1, -1);
    return isIPv6(inner) ? inner.toLowerCase() : undefined;
  }
  if (isIPv6(host)) return host.toLowerCase();
  if (host.length > 64 || !/^[0-9a-fx.]+$/i.test(host)) return undefined;
  const parts = host.split('.');
  if (parts.length > 4) return undefined;
  const numbers = parts.map(ipv4Part);
  if (numbers.some((n) => n === undefined || !Number.isFinite(n))) return undefined;
  const values = numbers as number[];
  // inet_aton: the last part fills the remaining bytes (a.b.c.d, a.b.cd, a.bcd, abcd).
  const last = values[values.length - 1]!;
  const head = values.slice(0, -1);
  if (head.some((n) => n > 255) || last >= 2 ** (8 * (5 - values.length))) return undefined;
  let value = 0;
  for (const n of head) value = value * 256 + n;
  value = value * 2 ** (8 * (5 - values.length)) + last;
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join('.');
}
