import { lstatSync, readlinkSync } from 'node:fs';
import type { MountSource } from './mount-sources.js';
import { SANDBOX_HOSTNAME } from './sandbox-identity-files.js';

/**
 * The host's system directories a confined command sees, read-only. On a merged-`/usr` host the
 * top-level ones are links into `/usr` and are recreated as the same links.
 */
const SYSTEM_DIRECTORIES = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/**
 * The `/etc` entries programs need and that say nothing about the host's accounts or secrets:
 * the dynamic loader's cache and configuration, certificate bundles (never `/etc/ssl/private`),
 * the alternatives links Debian's `/usr/bin` points through, time zone and MIME data.
 * `passwd`, `group`, `hosts`, `nsswitch.conf` and `hostname` are synthesized instead.
 */
const ETC_ENTRIES = [
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/ssl/certs',
  '/etc/ssl/openssl.cnf',
  '/etc/ca-certificates',
  '/etc/pki/tls/certs',
  '/etc/pki/ca-trust/extracted',
  '/etc/alternatives',
  '/etc/localtime',
  '/etc/timezone',
  '/etc/mime.types',
  '/etc/os-release',
  '/etc/debian_version',
  '/etc/protocols',
  '/etc/services',
];

/** Character devices a program may open; no others exist in the sandbox's `/dev`. */
const DEVICES = ['/dev/null', '/dev/zero', '/dev/full', '/dev/random', '/dev/urandom'];

export interface MountPlanInput {
  /**
   * The sandbox's mounts and its synthesized `/etc` files (see `sandbox-identity-files`), by
   * descriptor, parents first (`openMountSources`).
   */
  readonly sources: readonly MountSource[];
  /** Size of the private `/tmp` in bytes. */
  readonly tmpBytes: number;
  /** Working directory of the namespace's init (the workspace, or `/tmp` without one). */
  readonly initCwd: string;
  /** Read-only binds of the sandbox's egress (`openNamespaceEgress`), after its own mounts. */
  readonly egressArgs?: readonly string[];
}

type Kind = 'dir' | 'file' | 'link' | 'other' | undefined;

function kindOf(hostPath: string): Kind {
  try {
    const s = lstatSync(hostPath);
    if (s.isSymbolicLink()) return 'link';
    if (s.isDirectory()) return 'dir';
    if (s.isFile()) return 'file';
    return 'other';
  } catch {
    return undefined;
  }
}

/**
 * The bubblewrap arguments that build a thread's namespace, everything but the command: its own
 * user, mount, pid, ipc, uts and network namespaces (the network has loopback only); the system
 * directories and the needed `/etc` entries read-only; the synthesized identity files; a
 * size-limited private `/tmp`; a `/dev` with the harmless character devices only; its own
 * `/proc`; and the sandbox's mounts at their virtual paths, parents before children (so a child
 * is bound over its parent), each read-only when its mapping is. Nothing else of the host exists
 * in it: not the base directory, not another thread, not the gateway's cwd or home.
 *
 * The root of the namespace is bubblewrap's own tmpfs; it is remounted read-only last, so the
 * only writable places are the thread's writable mounts and `/tmp`.
 */
export function buildMountPlan(input: MountPlanInput): string[] {
  const args: string[] = [
    '--unshare-user',
    '--unshare-pid',
    '--unshare-net',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--hostname',
    SANDBOX_HOSTNAME,
    '--die-with-parent',
  ];
  args.push(...systemDirectoryArgs());
  for (const entry of ETC_ENTRIES) {
    const kind = kindOf(entry);
    // A link is bound as what it points to (bubblewrap resolves the source): the target may lie
    // outside the bound set, and a dangling link in the sandbox would help nobody.
    if (kind !== undefined && kind !== 'other') args.push('--ro-bind-try', entry, entry);
  }
  args.push('--proc', '/proc', '--tmpfs', '/dev');
  for (const device of DEVICES) args.push('--dev-bind-try', device, device);
  args.push(
    '--symlink',
    '/proc/self/fd',
    '/dev/fd',
    '--symlink',
    '/proc/self/fd/0',
    '/dev/stdin',
    '--symlink',
    '/proc/self/fd/1',
    '/dev/stdout',
    '--symlink',
    '/proc/self/fd/2',
    '/dev/stderr',
    // POSIX shared memory lands in `/tmp`, within its size.
    '--symlink',
    '/tmp',
    '/dev/shm',
    '--size',
    String(input.tmpBytes),
    '--perms',
    '1777',
    '--tmpfs',
    '/tmp',
  );
  for (const source of input.sources) {
    args.push(
      source.readOnly ? '--ro-bind-fd' : '--bind-fd',
      String(source.fd),
      source.destination,
    );
  }
  args.push(...(input.egressArgs ?? []));
  args.push('--remount-ro', '/', '--chdir', input.initCwd);
  return args;
}

/** The system directories, read-only (links recreated as links): enough to run a program. */
export function systemDirectoryArgs(): string[] {
  const args: string[] = [];
  for (const dir of SYSTEM_DIRECTORIES) {
    const kind = kindOf(dir);
    if (kind === 'link') args.push('--symlink', readlinkSync(dir), dir);
    else if (kind === 'dir') args.push('--ro-bind', dir, dir);
  }
  return args;
}
