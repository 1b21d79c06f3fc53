import { checkSeccompArch, seccompArchOf } from './seccomp-arch.js';
import {
  BpfAssembler,
  SECCOMP_RET_ALLOW,
  SECCOMP_RET_ERRNO,
  SECCOMP_RET_KILL_PROCESS,
  encodeProgram,
  type SockFilter,
} from './seccomp-bpf.js';
import {
  ERRNO_NUMBERS,
  SECCOMP_REFUSED_SYSCALLS,
  type RefusedSyscall,
  type SeccompErrno,
} from './seccomp-policy.js';
import { SYSCALL_TABLES, type SeccompArch } from './seccomp-syscalls.js';

export type { SeccompArch } from './seccomp-syscalls.js';
export { SeccompUnsupportedArchError } from './seccomp-arch.js';
export { SECCOMP_REFUSED_SYSCALLS } from './seccomp-policy.js';
export type { RefusedSyscall, SeccompErrno, ArgumentTest } from './seccomp-policy.js';

// struct seccomp_data, include/uapi/linux/seccomp.h: int nr; __u32 arch; __u64 instruction_pointer;
// __u64 args[6]. Both supported architectures are little-endian, so an argument's low 32 bits
// are the first word of its slot.
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const argLowWord = (arg: number): number => 16 + 8 * arg;

const NO_SYSCALL = 0xffffffff;
const KILL = 'kill';
const ALLOW = 'allow';
const errnoLabel = (errno: SeccompErrno): string => `errno-${errno}`;
const argumentsLabel = (rule: RefusedSyscall): string => `arguments-${rule.syscall}`;

/**
 * Compiles the policy for one architecture. The architecture check comes first: `nr` means
 * nothing until the ABI is known, and a process could otherwise switch ABI (x32 on x86_64, or a
 * 32-bit personality) to reach a refused call under another number. Anything from another ABI
 * kills the process rather than returning an error: no program run here has a reason to use one.
 */
export function compileSeccompPolicy(
  arch: SeccompArch,
  policy: readonly RefusedSyscall[] = SECCOMP_REFUSED_SYSCALLS,
): SockFilter[] {
  const table = SYSCALL_TABLES[arch];
  const seen = new Set<string>();
  for (const rule of policy) {
    // A second rule for one call would never be reached: the first match decides.
    if (seen.has(rule.syscall)) throw new Error(`seccomp policy names ${rule.syscall} twice`);
    seen.add(rule.syscall);
  }

  const asm = new BpfAssembler();
  asm.loadWord(OFFSET_ARCH).jumpIfEqual(table.auditArch, 'next', { label: KILL });
  asm.loadWord(OFFSET_NR);
  // -1 is no call: the kernel answers ENOSYS without running anything (a tracer sets it to skip
  // a call), so it is let through rather than killed as if it were from the x32 range.
  asm.jumpIfEqual(NO_SYSCALL, { label: ALLOW });
  if (table.foreignAbiFloor !== undefined)
    asm.jumpIfAtLeast(table.foreignAbiFloor, { label: KILL });
  for (const rule of policy) {
    const target = rule.when ? argumentsLabel(rule) : errnoLabel(rule.errno);
    asm.jumpIfEqual(table.numbers[rule.syscall], { label: target });
  }
  asm.label(ALLOW).ret(SECCOMP_RET_ALLOW);

  for (const rule of policy) {
    if (!rule.when) continue;
    asm.label(argumentsLabel(rule));
    const refuse = { label: errnoLabel(rule.errno) };
    rule.when.forEach((test, index) => {
      asm.loadWord(argLowWord(test.arg));
      if ('anyBitOf' in test) {
        asm.jumpIfAnySet(test.anyBitOf, refuse);
      } else if ('notOneOf' in test) {
        if (test.notOneOf.length === 0) throw new Error(`${rule.syscall}: notOneOf lists nothing`);
        const passed = { label: `${argumentsLabel(rule)}-${index}-passed` };
        test.notOneOf.forEach((value, i) => {
          const last = i === test.notOneOf.length - 1;
          asm.jumpIfEqual(value, passed, last ? refuse : 'next');
        });
        asm.label(passed.label);
      } else {
        if (test.mask !== undefined) asm.and(test.mask);
        asm.jumpIfEqual(test.equals, refuse);
      }
    });
    asm.ret(SECCOMP_RET_ALLOW);
  }

  for (const errno of Object.keys(ERRNO_NUMBERS) as SeccompErrno[]) {
    asm.label(errnoLabel(errno)).ret(SECCOMP_RET_ERRNO | ERRNO_NUMBERS[errno]);
  }
  asm.label(KILL).ret(SECCOMP_RET_KILL_PROCESS);
  return asm.assemble();
}

const compiled = new Map<SeccompArch, Buffer>();

/**
 * The seccomp program for confined commands, as the raw `struct sock_filter` array
 * `bwrap --seccomp FD` reads from FD and installs. Defaults to the running machine's
 * architecture; throws `SeccompUnsupportedArchError` (code `SECCOMP_UNSUPPORTED_ARCH`) for any
 * other than x86_64 and aarch64. Each call returns a fresh Buffer the caller may consume.
 */
export function seccompProgram(arch?: SeccompArch): Buffer {
  // The type does not hold for a JavaScript caller or a value read from config: checked here once.
  const target = arch === undefined ? seccompArchOf(process.arch) : checkSeccompArch(arch);
  let bytes = compiled.get(target);
  if (!bytes) {
    bytes = encodeProgram(compileSeccompPolicy(target));
    compiled.set(target, bytes);
  }
  return Buffer.from(bytes);
}
