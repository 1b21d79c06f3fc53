import type { SyscallName } from './seccomp-syscalls.js';

// What both seccomp test files hold the filter to: the emulator's (seccomp-filter.test.ts) and the
// kernel's under bwrap (seccomp-filter.bwrap.test.ts). Written out here, not derived from the
// policy, so dropping a refusal from the policy fails both.

/** The errno the filter answers a refused call with. */
export const EPERM = 1;
/** The errno clone3 is answered with, so the C library falls back to clone. */
export const ENOSYS = 38;

/** Refused with EPERM whatever their arguments. */
export const ALWAYS_EPERM: readonly SyscallName[] = [
  'ptrace',
  'process_vm_readv',
  'process_vm_writev',
  'mount',
  'umount2',
  'pivot_root',
  'move_mount',
  'open_tree',
  'fsopen',
  'fsconfig',
  'fsmount',
  'fspick',
  'mount_setattr',
  'unshare',
  'setns',
  'keyctl',
  'add_key',
  'request_key',
  'bpf',
  'perf_event_open',
  'userfaultfd',
  'kexec_load',
  'kexec_file_load',
  'init_module',
  'finit_module',
  'delete_module',
  'open_by_handle_at',
  'io_uring_setup',
  'io_uring_enter',
  'io_uring_register',
];
