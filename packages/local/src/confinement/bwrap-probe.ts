import { spawnSync } from 'node:child_process';
import { accessSync, closeSync, constants, openSync, readFileSync } from 'node:fs';
import { systemDirectoryArgs } from './mount-plan.js';
import type { SandboxOwner } from './sandbox-owner.js';

/** Where the tools are looked for: fixed system locations only, never the caller's `PATH`. */
const BWRAP_CANDIDATES = ['/usr/bin/bwrap', '/bin/bwrap', '/usr/local/bin/bwrap'];
const NSENTER_CANDIDATES = [
  '/usr/bin/nsenter',
  '/bin/nsenter',
  '/usr/sbin/nsenter',
  '/sbin/nsenter',
];
const PROBE_TIMEOUT_MS = 10_000;
const STDERR_SHOWN = 400;

/** The tools a confined command needs, found and seen working. */
export interface ConfinementTools {
  readonly bwrap: string;
  readonly nsenter: string;
  /** bubblewrap 0.8 or later: `--disable-userns` (older ones rely on the seccomp filter alone). */
  readonly disableUserns: boolean;
}

/** `bubblewrap 0.8.0` → [0, 8, 0]; undefined when unreadable. */
export function parseBwrapVersion(text: string): [number, number, number] | undefined {
  const m = /(\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : undefined;
}

export type ConfinementProbe =
  | ({ readonly ok: true } & ConfinementTools)
  | { readonly ok: false; readonly cause: string; readonly fix: string };

function executable(candidates: readonly string[]): string | undefined {
  for (const file of candidates) {
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not there, or not executable: the next candidate
    }
  }
  return undefined;
}

function readSysctl(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/**
 * Why bubblewrap could not create its namespaces, from its own words and the host's switches.
 * Each answer names the one change that makes it work.
 */
export function diagnoseBwrapFailure(
  stderr: string,
  sysctl: (file: string) => string | undefined = readSysctl,
): { cause: string; fix: string } {
  const said = stderr.trim().slice(0, STDERR_SHOWN) || 'no message';
  if (/Unknown option|unrecognized option/i.test(stderr)) {
    return {
      cause: `this bubblewrap is too old (confinement needs 0.6 or later: --size, --bind-fd); bwrap said: ${said}`,
      fix: 'install bubblewrap 0.6 or later (Debian 12, Ubuntu 22.04, Fedora 36 and later ship one)',
    };
  }
  if (sysctl('/proc/sys/user/max_user_namespaces') === '0') {
    return {
      cause: `user namespaces are disabled (user.max_user_namespaces = 0); bwrap said: ${said}`,
      fix: 'sysctl -w user.max_user_namespaces=15000 (and persist it in /etc/sysctl.d)',
    };
  }
  if (sysctl('/proc/sys/kernel/unprivileged_userns_clone') === '0') {
    return {
      cause: `unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0); bwrap said: ${said}`,
      fix: 'sysctl -w kernel.unprivileged_userns_clone=1 (and persist it in /etc/sysctl.d)',
    };
  }
  if (sysctl('/proc/sys/kernel/apparmor_restrict_unprivileged_userns') === '1') {
    return {
      cause: `AppArmor restricts unprivileged user namespaces (Ubuntu 23.10+); bwrap said: ${said}`,
      fix:
        'give bwrap an AppArmor profile that allows userns (a file in /etc/apparmor.d with ' +
        '"profile bwrap /usr/bin/bwrap flags=(unconfined) { userns, }", then apparmor_parser -r it), ' +
        'or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0',
    };
  }
  if (/Operation not permitted|No permissions to create/i.test(stderr)) {
    return {
      cause: `creating namespaces is refused here, typically by a container runtime's seccomp or AppArmor profile; bwrap said: ${said}`,
      fix:
        'run the gateway where unprivileged user namespaces work (a VM or host), or start its ' +
        'container with --security-opt seccomp=unconfined --security-opt apparmor=unconfined; ' +
        'or use a container provider (@sbx/aio)',
    };
  }
  return {
    cause: `bubblewrap failed: ${said}`,
    fix: 'run `bwrap --unshare-all --ro-bind /usr /usr /usr/bin/true` as the sandbox user to see why',
  };
}

const cache = new Map<string, ConfinementProbe>();

/**
 * Whether bubblewrap can confine a command here, as `owner` (the host user confined commands run
 * as): finds `bwrap` and `nsenter`, then runs `bwrap --unshare-all … true` once. Synchronous
 * (one short child process, cached per owner for the life of the process), because a provider
 * decides its command mode when it is built.
 */
export function probeConfinement(owner: SandboxOwner | undefined): ConfinementProbe {
  const key = owner ? `${owner.uid}:${owner.gid}` : 'self';
  const known = cache.get(key);
  if (known) return known;
  const probed = runProbe(owner);
  cache.set(key, probed);
  return probed;
}

function runProbe(owner: SandboxOwner | undefined): ConfinementProbe {
  if (process.platform !== 'linux') {
    return {
      ok: false,
      cause: `bubblewrap confines commands on Linux only (this is ${process.platform})`,
      fix: 'use a container provider (@sbx/aio); a macOS Seatbelt backend is designed but not built',
    };
  }
  const bwrap = executable(BWRAP_CANDIDATES);
  if (!bwrap) {
    return {
      ok: false,
      cause: `bubblewrap is not installed (looked for ${BWRAP_CANDIDATES.join(', ')})`,
      fix: 'install it: apt-get install bubblewrap (Debian, Ubuntu), dnf install bubblewrap (Fedora), apk add bubblewrap (Alpine)',
    };
  }
  const nsenter = executable(NSENTER_CANDIDATES);
  if (!nsenter) {
    return {
      ok: false,
      cause: `nsenter (util-linux) is not installed (looked for ${NSENTER_CANDIDATES.join(', ')})`,
      fix: 'install util-linux',
    };
  }
  const version = parseBwrapVersion(
    spawnSync(bwrap, ['--version'], { encoding: 'utf8', timeout: PROBE_TIMEOUT_MS }).stdout ?? '',
  );
  // The features a thread's namespace uses, exercised for real: a sized tmpfs and a bind from a
  // descriptor (bubblewrap 0.5 and 0.6 added them).
  const usr = openDirectory('/usr');
  let run: ReturnType<typeof spawnSync>;
  try {
    run = spawnSync(
      bwrap,
      [
        '--unshare-all',
        '--die-with-parent',
        ...systemDirectoryArgs(),
        '--proc',
        '/proc',
        '--size',
        '1048576',
        '--tmpfs',
        '/tmp',
        '--ro-bind-fd',
        '3',
        '/mnt',
        '--',
        '/usr/bin/true',
      ],
      {
        stdio: ['ignore', 'ignore', 'pipe', usr],
        timeout: PROBE_TIMEOUT_MS,
        env: {},
        ...(owner ? { uid: owner.uid, gid: owner.gid } : {}),
      },
    );
  } finally {
    if (typeof usr === 'number') closeSync(usr);
  }
  if (run.error) {
    return {
      ok: false,
      cause: `bubblewrap could not be run: ${run.error.message}`,
      fix: `check that ${bwrap} is executable by uid ${owner?.uid ?? process.getuid?.()}`,
    };
  }
  if (run.status !== 0) {
    return { ok: false, ...diagnoseBwrapFailure(run.stderr?.toString() ?? '') };
  }
  const [major = 0, minor = 0] = version ?? [];
  return { ok: true, bwrap, nsenter, disableUserns: major > 0 || minor >= 8 };
}

function openDirectory(dir: string): number | 'ignore' {
  try {
    return openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  } catch {
    return 'ignore';
  }
}
