import net from 'node:net';

/**
 * Address ranges that are never behind a corporate proxy: loopback, private, link-local and the
 * other special-purpose ranges Python's `ipaddress.is_private` covers (which is what deployments of
 * the reference implementation were tuned against). A proxy answering for one of these would be
 * answering for a container on this host or in this cluster, which it cannot reach.
 */
const DIRECT_RANGES = new net.BlockList();
for (const [address, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 29],
  ['192.0.0.170', 31],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['240.0.0.0', 4],
] as const) {
  DIRECT_RANGES.addSubnet(address, prefix, 'ipv4');
}
DIRECT_RANGES.addAddress('255.255.255.255', 'ipv4');
for (const [address, prefix] of [
  ['::1', 128],
  ['::', 128],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
] as const) {
  DIRECT_RANGES.addSubnet(address, prefix, 'ipv6');
}

/** Host-name suffixes that only resolve on this host or inside a container runtime. */
const INTERNAL_SUFFIXES = ['.localhost', '.docker.internal', '.containers.internal'];

function mappedIpv4(address: string): string | undefined {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return m?.[1];
}

function isDirectAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return DIRECT_RANGES.check(address, 'ipv4');
  const v4 = mappedIpv4(address);
  if (v4 !== undefined) return DIRECT_RANGES.check(v4, 'ipv4');
  return DIRECT_RANGES.check(address, 'ipv6');
}

/**
 * Whether requests to `url` may go through the proxies named in the environment (`HTTP_PROXY`,
 * `HTTPS_PROXY`, `NO_PROXY`). Sandbox containers and the provisioner usually live on this host or
 * in this cluster, where an environment proxy can only get in the way (it answers 502 for a
 * healthy container it cannot reach), so such destinations are reached directly:
 *
 * - `localhost`, `*.localhost`, `*.docker.internal`, `*.containers.internal` → direct;
 * - an IP literal in a loopback, private, link-local or other special-purpose range → direct;
 *   any other IP → proxy;
 * - a single-label host (`sandbox`, `provisioner`, `k3s`: cluster service names) → direct;
 *   a dotted name (`sandbox.example.com`) → proxy.
 *
 * A URL that does not parse, or has no host, keeps the environment's proxies (true). Pure.
 */
export function shouldTrustEnvProxy(url: string): boolean {
  let hostname: string;
  try {
    hostname = new URL(url).hostname;
  } catch {
    return true;
  }
  let host = hostname.toLowerCase();
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  host = host.replace(/\.$/, '');
  if (host === '') return true;
  if (host === 'localhost' || INTERNAL_SUFFIXES.some((s) => host.endsWith(s))) return false;
  if (net.isIP(host) !== 0) return !isDirectAddress(host);
  return host.includes('.');
}
