/**
 * Syscall numbers of the calls the seccomp policy names, per architecture. A filter compares
 * `seccomp_data.nr` against these, so one wrong number silently lets a call through: the test
 * suite checks every entry against the kernel headers installed on the machine when they are
 * there.
 *
 * Source: Linux UAPI headers (linux-libc-dev 6.1):
 *   x86_64:  /usr/include/x86_64-linux-gnu/asm/unistd_64.h, generated from the kernel's
 *            arch/x86/entry/syscalls/syscall_64.tbl (the `common`/`64` rows);
 *   aarch64: /usr/include/asm-generic/unistd.h, the kernel's include/uapi/asm-generic/unistd.h,
 *            which arm64 uses for its native (64-bit) table.
 * Numbers never change once assigned (they are ABI), so a newer kernel only adds calls.
 */

/** The architectures the filter is built for, named as the kernel and `uname -m` name them. */
export type SeccompArch = 'x86_64' | 'aarch64';

export const SECCOMP_ARCHES: readonly SeccompArch[] = ['x86_64', 'aarch64'];

export type SyscallName =
  | 'ptrace'
  | 'process_vm_readv'
  | 'process_vm_writev'
  | 'mount'
  | 'umount2'
  | 'pivot_root'
  | 'move_mount'
  | 'open_tree'
  | 'fsopen'
  | 'fsconfig'
  | 'fsmount'
  | 'fspick'
  | 'mount_setattr'
  | 'unshare'
  | 'setns'
  | 'clone'
  | 'clone3'
  | 'keyctl'
  | 'add_key'
  | 'request_key'
  | 'bpf'
  | 'perf_event_open'
  | 'userfaultfd'
  | 'kexec_load'
  | 'kexec_file_load'
  | 'init_module'
  | 'finit_module'
  | 'delete_module'
  | 'open_by_handle_at'
  | 'io_uring_setup'
  | 'io_uring_enter'
  | 'io_uring_register'
  | 'socket'
  | 'ioctl';

export interface SyscallTable {
  /** `seccomp_data.arch` of this ABI: `AUDIT_ARCH_*` from include/uapi/linux/audit.h. */
  readonly auditArch: number;
  /**
   * Syscall numbers at or above this belong to another ABI sharing the architecture value (x32 on
   * x86_64 sets bit 30, `__X32_SYSCALL_BIT`) and are refused outright.
   */
  readonly foreignAbiFloor: number | undefined;
  readonly numbers: Readonly<Record<SyscallName, number>>;
}

/** AUDIT_ARCH_X86_64 = EM_X86_64 (62) | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE. */
export const AUDIT_ARCH_X86_64 = 0xc000003e;
/** AUDIT_ARCH_AARCH64 = EM_AARCH64 (183) | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE. */
export const AUDIT_ARCH_AARCH64 = 0xc00000b7;
/** __X32_SYSCALL_BIT, from arch/x86/include/uapi/asm/unistd.h. */
export const X32_SYSCALL_BIT = 0x40000000;

export const SYSCALL_TABLES: Readonly<Record<SeccompArch, SyscallTable>> = {
  x86_64: {
    auditArch: AUDIT_ARCH_X86_64,
    foreignAbiFloor: X32_SYSCALL_BIT,
    numbers: {
      ioctl: 16,
      socket: 41,
      clone: 56,
      ptrace: 101,
      pivot_root: 155,
      mount: 165,
      umount2: 166,
      init_module: 175,
      delete_module: 176,
      kexec_load: 246,
      add_key: 248,
      request_key: 249,
      keyctl: 250,
      unshare: 272,
      perf_event_open: 298,
      open_by_handle_at: 304,
      setns: 308,
      process_vm_readv: 310,
      process_vm_writev: 311,
      finit_module: 313,
      kexec_file_load: 320,
      bpf: 321,
      userfaultfd: 323,
      io_uring_setup: 425,
      io_uring_enter: 426,
      io_uring_register: 427,
      open_tree: 428,
      move_mount: 429,
      fsopen: 430,
      fsconfig: 431,
      fsmount: 432,
      fspick: 433,
      clone3: 435,
      mount_setattr: 442,
    },
  },
  aarch64: {
    auditArch: AUDIT_ARCH_AARCH64,
    foreignAbiFloor: undefined,
    numbers: {
      ioctl: 29,
      umount2: 39,
      mount: 40,
      pivot_root: 41,
      unshare: 97,
      kexec_load: 104,
      init_module: 105,
      delete_module: 106,
      ptrace: 117,
      socket: 198,
      add_key: 217,
      request_key: 218,
      keyctl: 219,
      clone: 220,
      perf_event_open: 241,
      open_by_handle_at: 265,
      setns: 268,
      process_vm_readv: 270,
      process_vm_writev: 271,
      finit_module: 273,
      bpf: 280,
      userfaultfd: 282,
      kexec_file_load: 294,
      io_uring_setup: 425,
      io_uring_enter: 426,
      io_uring_register: 427,
      open_tree: 428,
      move_mount: 429,
      fsopen: 430,
      fsconfig: 431,
      fsmount: 432,
      fspick: 433,
      clone3: 435,
      mount_setattr: 442,
    },
  },
};
