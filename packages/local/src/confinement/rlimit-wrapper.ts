import { accessSync, constants as fsConstants } from 'node:fs';
import { InvalidArgumentError } from '@sbx/core';
import { confinementLimitIssues, type ConfinementLimits } from './cgroup-limits.js';

/**
 * What sets a command's rlimits before it runs (Node cannot set them on a child): util-linux's
 * `prlimit`, or a POSIX shell running a fixed script. Either way the command arrives as argv
 * elements after the wrapper's own, never inside a shell line.
 */
export type RlimitWrapper =
  | { readonly kind: 'prlimit'; readonly path: string }
  | { readonly kind: 'sh'; readonly path: string };

/** Fixed places only: a `PATH` lookup would let the environment pick the program. */
export const PRLIMIT_CANDIDATES: readonly string[] = ['/usr/bin/prlimit', '/bin/prlimit'];
export const SH_WRAPPER: RlimitWrapper = Object.freeze({ kind: 'sh', path: '/bin/sh' });

/**
 * The shell form's script: a literal. Its numbers arrive as `$1` and `$2`, the command as the
 * rest. POSIX `ulimit -f` counts 512-byte blocks (dash, busybox, and bash invoked as `sh`); `-d`
 * counts KiB in all of them; without -H/-S each call sets the soft and the hard limit. No `nproc`:
 * its flag differs between shells (`-u` in bash and busybox, `-p` in dash, where bash's `-p` is
 * the pipe size), and a wrong guess would set another limit.
 */
export const SH_RLIMIT_SCRIPT =
  'ulimit -c 0 && ulimit -d "$1" && ulimit -f "$2" && shift 2 && exec "$@"';

let found: RlimitWrapper | undefined;

/** `prlimit` where one of the fixed paths is executable, else `/bin/sh`; looked up once. */
export function defaultRlimitWrapper(): RlimitWrapper {
  found ??= findRlimitWrapper(PRLIMIT_CANDIDATES);
  return found;
}

export function findRlimitWrapper(candidates: readonly string[]): RlimitWrapper {
  for (const candidate of candidates) {
    try {
      accessSync(candidate, fsConstants.X_OK);
      return { kind: 'prlimit', path: candidate };
    } catch {
      // Not there or not executable: the next candidate.
    }
  }
  return SH_WRAPPER;
}

/**
 * `argv` prefixed with a wrapper that sets the per-process floor of `limits` and then execs it:
 * no core dumps, `nproc` = `pids` (prlimit only; counted per user: in effect inside a user
 * namespace, ignored for root outside one), `data` = `memoryBytes` (private writable memory of one process, which
 * unlike `as` leaves large reservations such as V8's alone), `fsize` = `fileSizeBytes`.
 *
 *
 * Where it goes matters for `nproc`: since Linux 5.14 it is counted per user per user namespace,
 * up the chain, and a namespace's ceiling for its creator's user is the creator's limit when the
 * namespace was made. Wrap the commands that run in (or enter) the sandbox's namespace, not the
 * bubblewrap that creates it: wrapped around the creation, the limit would become the ceiling of
 * the host user every sandbox of a root gateway shares, and one tenant's processes would count
 * against another's.
 *
 * @throws InvalidArgumentError for an empty argv, a non-string element, or limits outside bounds
 */
export function rlimitArgv(
  limits: ConfinementLimits,
  argv: readonly string[],
  wrapper: RlimitWrapper = defaultRlimitWrapper(),
): string[] {
  const issues = confinementLimitIssues(limits);
  if (issues.length > 0) {
    throw new InvalidArgumentError(
      `Invalid confinement limits: ${issues.map((i) => `${i.key} ${i.message}`).join('; ')}`,
    );
  }
  if (argv.length === 0 || argv.some((a) => typeof a !== 'string' || a.includes('\0'))) {
    throw new InvalidArgumentError(
      'A confined command needs a non-empty argv of strings without NUL',
    );
  }
  if (wrapper.kind === 'prlimit') {
    return [
      wrapper.path,
      '--core=0',
      `--nproc=${limits.pids}`,
      `--data=${limits.memoryBytes}`,
      `--fsize=${limits.fileSizeBytes}`,
      // Ends prlimit's options: an argv[0] starting with `-` is the command, not an option.
      '--',
      ...argv,
    ];
  }
  return [
    wrapper.path,
    '-c',
    SH_RLIMIT_SCRIPT,
    'sh',
    String(Math.floor(limits.memoryBytes / 1024)),
    String(Math.floor(limits.fileSizeBytes / 512)),
    ...argv,
  ];
}
