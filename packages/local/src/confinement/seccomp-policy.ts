import type { SyscallName } from './seccomp-syscalls.js';

/**
 * What a confined command may not do, as data: the filter is compiled from this list, and
 * `sbx doctor` and the docs describe it from the same list, so the three cannot disagree.
 *
 * Everything not listed is allowed: the filter is a deny list on top of the namespaces, which are
 * the boundary. It closes the calls that reach kernel surface a sandboxed process has no use for
 * and that has a history of privilege escalations, and the calls that would let a process undo or
 * step around its namespaces (create new ones, enter others, remount, trace a neighbour).
 */

export type SeccompErrno = 'EPERM' | 'ENOSYS';

/** errno numbers; identical on x86_64 and aarch64 (both use include/uapi/asm-generic/errno*.h). */
export const ERRNO_NUMBERS: Readonly<Record<SeccompErrno, number>> = { EPERM: 1, ENOSYS: 38 };

/**
 * A test on one argument. Only the low 32 bits are compared: every argument tested here is an
 * `int` (or, for clone, is cut to its lower 32 bits by the kernel before use), so the high half is
 * ignored by the kernel too and cannot be used to slip past the check.
 */
export type ArgumentTest =
  | { readonly arg: number; readonly anyBitOf: number }
  | { readonly arg: number; readonly mask?: number; readonly equals: number }
  | { readonly arg: number; readonly notOneOf: readonly number[] };

export interface RefusedSyscall {
  readonly syscall: SyscallName;
  readonly errno: SeccompErrno;
  /** Refused only when one of these holds; absent: refused whatever the arguments. */
  readonly when?: readonly ArgumentTest[];
  /** Human-readable condition, for docs and doctor. */
  readonly condition?: string;
  readonly reason: string;
}

// include/uapi/linux/sched.h
const CLONE_NEWTIME = 0x00000080;
const CLONE_NEWNS = 0x00020000;
const CLONE_NEWCGROUP = 0x02000000;
const CLONE_NEWUTS = 0x04000000;
const CLONE_NEWIPC = 0x08000000;
const CLONE_NEWUSER = 0x10000000;
const CLONE_NEWPID = 0x20000000;
const CLONE_NEWNET = 0x40000000;
export const CLONE_NAMESPACE_FLAGS =
  (CLONE_NEWTIME |
    CLONE_NEWNS |
    CLONE_NEWCGROUP |
    CLONE_NEWUTS |
    CLONE_NEWIPC |
    CLONE_NEWUSER |
    CLONE_NEWPID |
    CLONE_NEWNET) >>>
  0;

// include/linux/socket.h, include/linux/net.h
const AF_UNIX = 1;
const AF_INET = 2;
const AF_INET6 = 10;
const SOCK_RAW = 3;
const SOCK_PACKET = 10;
/** SOCK_TYPE_MASK: the type without SOCK_NONBLOCK / SOCK_CLOEXEC, which share the argument. */
const SOCK_TYPE_MASK = 0xf;

// include/uapi/asm-generic/ioctls.h (x86 and arm64 use the generic values)
const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;

const always = (
  syscall: SyscallName,
  reason: string,
  errno: SeccompErrno = 'EPERM',
): RefusedSyscall => ({ syscall, errno, reason });

export const SECCOMP_REFUSED_SYSCALLS: readonly RefusedSyscall[] = [
  always('ptrace', 'tracing another process reads and rewrites its memory and registers'),
  always('process_vm_readv', "reads another process's memory"),
  always('process_vm_writev', "writes another process's memory"),
  always('mount', 'the mount table is fixed when the sandbox starts'),
  always('umount2', 'unmounting would uncover what the sandbox mounted over'),
  always('pivot_root', 'changes the root the sandbox was given'),
  always('move_mount', 'new mount API: moves mounts'),
  always('open_tree', 'new mount API: clones mount trees'),
  always('fsopen', 'new mount API: creates file system contexts'),
  always('fsconfig', 'new mount API: configures file system contexts'),
  always('fsmount', 'new mount API: creates mounts'),
  always('fspick', 'new mount API: reconfigures existing mounts'),
  always('mount_setattr', 'new mount API: changes mount flags (read-only, idmapping)'),
  always('unshare', 'new namespaces would give the process a fresh set of capabilities'),
  always('setns', 'enters other namespaces'),
  {
    syscall: 'clone',
    errno: 'EPERM',
    // The flags are the first argument on both architectures: kernel/fork.c declares clone with
    // clone_flags first unless CONFIG_CLONE_BACKWARDS2 (s390), and arm64 selects
    // CONFIG_CLONE_BACKWARDS, which only swaps tls and child_tidptr.
    when: [{ arg: 0, anyBitOf: CLONE_NAMESPACE_FLAGS }],
    condition: 'with a CLONE_NEW* namespace flag',
    reason: 'creates namespaces like unshare; plain fork and threads stay allowed',
  },
  {
    syscall: 'clone3',
    errno: 'ENOSYS',
    reason:
      'its flags sit in a struct in memory, which a filter cannot read; ENOSYS makes glibc and others fall back to clone, whose flags it can',
  },
  always('keyctl', 'the kernel keyring is not namespaced: keys leak across tenants'),
  always('add_key', 'the kernel keyring is not namespaced'),
  always('request_key', 'the kernel keyring is not namespaced'),
  always('bpf', 'loads programs into the kernel'),
  always(
    'perf_event_open',
    'kernel profiling interface, a frequent source of exploits and side channels',
  ),
  always('userfaultfd', 'lets a process stall the kernel mid-copy, a staple of race exploits'),
  always('kexec_load', 'replaces the running kernel'),
  always('kexec_file_load', 'replaces the running kernel'),
  always('init_module', 'loads kernel modules'),
  always('finit_module', 'loads kernel modules'),
  always('delete_module', 'unloads kernel modules'),
  always('open_by_handle_at', 'opens files by handle, bypassing the mount namespace'),
  always(
    'io_uring_setup',
    'io_uring performs reads, writes, connects and opens without the calls passing this filter',
  ),
  always('io_uring_enter', 'io_uring, see io_uring_setup'),
  always('io_uring_register', 'io_uring, see io_uring_setup'),
  {
    syscall: 'socket',
    errno: 'EPERM',
    when: [
      // An allowlist: a family added to the kernel later is refused until someone looks at it.
      { arg: 0, notOneOf: [AF_UNIX, AF_INET, AF_INET6] },
      { arg: 1, mask: SOCK_TYPE_MASK, equals: SOCK_RAW },
      { arg: 1, mask: SOCK_TYPE_MASK, equals: SOCK_PACKET },
    ],
    condition:
      'any family but AF_UNIX, AF_INET and AF_INET6 (so AF_NETLINK, AF_PACKET, AF_VSOCK, AF_ALG, ...), or type SOCK_RAW or SOCK_PACKET',
    reason:
      'raw, packet and netlink sockets reach the network stack and kernel configuration below TCP/UDP; vsock is not confined by the network namespace (it reaches the hypervisor host); the other families are kernel surface a command has no use for; (AF_INET, SOCK_PACKET) is the legacy spelling of a packet socket',
  },
  {
    syscall: 'ioctl',
    errno: 'EPERM',
    when: [
      { arg: 1, equals: TIOCSTI },
      { arg: 1, equals: TIOCLINUX },
    ],
    condition: 'TIOCSTI or TIOCLINUX',
    reason: "pushes input into a terminal the sandbox shares, which the terminal's owner then runs",
  },
];
