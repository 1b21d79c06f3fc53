import { existsSync, readFileSync } from 'node:fs';
import { SbxError, isSbxError } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import { seccompArchOf } from './seccomp-arch.js';
import {
  BpfAssembler,
  SECCOMP_RET_ALLOW,
  SECCOMP_RET_ERRNO,
  SECCOMP_RET_KILL_PROCESS,
  decodeProgram,
  encodeProgram,
} from './seccomp-bpf.js';
import { runSeccomp, type SeccompCall } from './seccomp-emulator.js';
import {
  SECCOMP_REFUSED_SYSCALLS,
  SeccompUnsupportedArchError,
  compileSeccompPolicy,
  seccompProgram,
  type SeccompArch,
} from './seccomp-filter.js';
import { SYSCALL_TABLES, type SyscallName } from './seccomp-syscalls.js';
import {
  ALWAYS_EPERM,
  ENOSYS as ENOSYS_ERRNO,
  EPERM as EPERM_ERRNO,
} from './seccomp-test-support.js';

const ARCHES: readonly SeccompArch[] = ['x86_64', 'aarch64'];
const EPERM = SECCOMP_RET_ERRNO | EPERM_ERRNO;
const ENOSYS = SECCOMP_RET_ERRNO | ENOSYS_ERRNO;

const NAMESPACE_FLAGS: Readonly<Record<string, number>> = {
  CLONE_NEWTIME: 0x80,
  CLONE_NEWNS: 0x20000,
  CLONE_NEWCGROUP: 0x02000000,
  CLONE_NEWUTS: 0x04000000,
  CLONE_NEWIPC: 0x08000000,
  CLONE_NEWUSER: 0x10000000,
  CLONE_NEWPID: 0x20000000,
  CLONE_NEWNET: 0x40000000,
};
const SIGCHLD = 17;
// What glibc's pthread_create passes to clone when clone3 is unavailable.
const THREAD_FLAGS = 0x3d0f00;

function decide(arch: SeccompArch, syscall: SyscallName | number, args: bigint[] = []): number {
  const table = SYSCALL_TABLES[arch];
  const nr = typeof syscall === 'number' ? syscall : table.numbers[syscall];
  return runSeccomp(decodeProgram(seccompProgram(arch)), { arch: table.auditArch, nr, args });
}

const hex = (bytes: Buffer) => bytes.toString('hex');

describe('classic BPF encoding', () => {
  it('encodes struct sock_filter little-endian, 8 bytes each', () => {
    const bytes = encodeProgram([
      { code: 0x20, jt: 0, jf: 0, k: 4 }, // ld [4]
      { code: 0x15, jt: 1, jf: 2, k: 0xc000003e }, // jeq #AUDIT_ARCH_X86_64
      { code: 0x06, jt: 0, jf: 0, k: 0x7fff0000 }, // ret ALLOW
      { code: 0x06, jt: 0, jf: 0, k: 0x00050001 }, // ret ERRNO(EPERM)
    ]);
    expect(hex(bytes)).toBe(
      '2000000004000000' + '150001023e0000c0' + '060000000000ff7f' + '0600000001000500',
    );
    expect(decodeProgram(bytes)).toEqual([
      { code: 0x20, jt: 0, jf: 0, k: 4 },
      { code: 0x15, jt: 1, jf: 2, k: 0xc000003e },
      { code: 0x06, jt: 0, jf: 0, k: 0x7fff0000 },
      { code: 0x06, jt: 0, jf: 0, k: 0x00050001 },
    ]);
  });

  it('assembles the opcodes of ld, and, jeq, jge, jset and ret with resolved forward jumps', () => {
    const program = new BpfAssembler()
      .loadWord(16)
      .and(0xf)
      .jumpIfEqual(3, { label: 'refuse' })
      .jumpIfAtLeast(0x40000000, { label: 'refuse' }, { label: 'allow' })
      .jumpIfAnySet(0x10000000, { label: 'refuse' })
      .label('allow')
      .ret(SECCOMP_RET_ALLOW)
      .label('refuse')
      .ret(EPERM)
      .assemble();
    expect(hex(encodeProgram(program))).toBe(
      [
        '2000000010000000',
        '540000000f000000',
        '1500030003000000',
        '3500020100000040',
        '4500010000000010',
        '060000000000ff7f',
        '0600000001000500',
      ].join(''),
    );
  });

  it('refuses a jump longer than one byte holds instead of truncating it', () => {
    const asm = new BpfAssembler().loadWord(0).jumpIfEqual(1, { label: 'far' });
    for (let i = 0; i < 256; i++) asm.ret(SECCOMP_RET_ALLOW);
    asm.label('far').ret(EPERM);
    expect(() => asm.assemble()).toThrow(/spans 256 instructions/);
  });

  it('refuses backward jumps, missing labels and values wider than 32 bits', () => {
    const back = new BpfAssembler().label('top').loadWord(0).jumpIfEqual(1, { label: 'top' });
    expect(() => back.assemble()).toThrow(/backwards/);
    expect(() => new BpfAssembler().jumpIfEqual(1, { label: 'nowhere' }).assemble()).toThrow(
      /never placed/,
    );
    expect(() => new BpfAssembler().ret(2 ** 32)).toThrow(RangeError);
    expect(() => new BpfAssembler().loadWord(-4)).toThrow(RangeError);
  });

  it('refuses a byte string that is not a whole number of instructions', () => {
    expect(() => decodeProgram(Buffer.alloc(12))).toThrow(/multiple of 8/);
  });
});

describe.each(ARCHES)('the seccomp program for %s', (arch) => {
  const table = SYSCALL_TABLES[arch];

  it('checks seccomp_data.arch before anything else and kills on any other value', () => {
    const program = decodeProgram(seccompProgram(arch));
    expect(program[0]).toEqual({ code: 0x20, jt: 0, jf: 0, k: 4 });
    expect(program[1]).toMatchObject({ code: 0x15, jt: 0, k: table.auditArch });
    expect(program[1 + 1 + program[1]!.jf]).toEqual({
      code: 0x06,
      jt: 0,
      jf: 0,
      k: SECCOMP_RET_KILL_PROCESS,
    });
  });

  it('kills a call made under another architecture, allowed or refused', () => {
    const program = decodeProgram(seccompProgram(arch));
    const other = arch === 'x86_64' ? SYSCALL_TABLES.aarch64 : SYSCALL_TABLES.x86_64;
    const foreign: SeccompCall[] = [
      { arch: other.auditArch, nr: 0 },
      { arch: other.auditArch, nr: table.numbers.ptrace },
      { arch: 0x40000003 /* AUDIT_ARCH_I386 */, nr: 26 /* i386 ptrace */ },
      { arch: 0x40000028 /* AUDIT_ARCH_ARM */, nr: 0 },
    ];
    for (const call of foreign) expect(runSeccomp(program, call)).toBe(SECCOMP_RET_KILL_PROCESS);
  });

  it.each(ALWAYS_EPERM)('refuses %s with EPERM whatever its arguments', (name) => {
    expect(decide(arch, name)).toBe(EPERM);
    expect(decide(arch, name, [0xffffffffffffffffn, 1n, 2n, 3n, 4n, 5n])).toBe(EPERM);
  });

  it('answers clone3 with ENOSYS so the C library falls back to clone', () => {
    expect(decide(arch, 'clone3')).toBe(ENOSYS);
  });

  it.each(Object.entries(NAMESPACE_FLAGS))('refuses clone with %s', (_flag, bit) => {
    expect(decide(arch, 'clone', [BigInt(bit | SIGCHLD)])).toBe(EPERM);
    expect(decide(arch, 'clone', [BigInt(bit | THREAD_FLAGS)])).toBe(EPERM);
  });

  it('allows clone for fork and for threads', () => {
    expect(decide(arch, 'clone', [BigInt(SIGCHLD)])).toBe(SECCOMP_RET_ALLOW);
    expect(decide(arch, 'clone', [BigInt(THREAD_FLAGS)])).toBe(SECCOMP_RET_ALLOW);
    // The kernel reads only the low 32 bits of clone's flags, so the filter does too.
    expect(decide(arch, 'clone', [(0x10000000n << 32n) | BigInt(SIGCHLD)])).toBe(SECCOMP_RET_ALLOW);
  });

  const SOCK_NONBLOCK = 0x800;
  const SOCK_CLOEXEC = 0x80000;
  it.each([
    ['AF_NETLINK, SOCK_DGRAM', 16, 2],
    ['AF_NETLINK, SOCK_RAW|SOCK_CLOEXEC', 16, 3 | SOCK_CLOEXEC],
    ['AF_PACKET, SOCK_DGRAM', 17, 2],
    ['AF_INET, SOCK_RAW', 2, 3],
    ['AF_INET6, SOCK_RAW|SOCK_NONBLOCK|SOCK_CLOEXEC', 10, 3 | SOCK_NONBLOCK | SOCK_CLOEXEC],
    ['AF_INET, SOCK_PACKET (legacy packet socket)', 2, 10],
    // Families outside the network namespace or with kernel surface and no use in a sandbox:
    // vsock reaches the hypervisor's host whatever the namespace, AF_ALG the crypto API.
    ['AF_VSOCK, SOCK_STREAM', 40, 1],
    ['AF_ALG, SOCK_SEQPACKET', 38, 5],
    ['AF_XDP, SOCK_RAW', 44, 3],
    ['AF_BLUETOOTH, SOCK_STREAM', 31, 1],
    ['AF_KEY, SOCK_RAW', 15, 3],
    ['AF_CAN, SOCK_DGRAM', 29, 2],
    ['AF_TIPC, SOCK_RDM', 30, 4],
    ['AF_RDS, SOCK_SEQPACKET', 21, 5],
    ['AF_UNSPEC', 0, 1],
    ['a family number no kernel has yet', 46, 1],
    ['AF_INET with high bits set in the low word', 0x10002, 1],
  ])('refuses socket(%s)', (_what, domain, type) => {
    expect(decide(arch, 'socket', [BigInt(domain), BigInt(type), 0n])).toBe(EPERM);
  });

  it.each([
    ['AF_UNIX, SOCK_STREAM', 1, 1],
    ['AF_UNIX, SOCK_DGRAM|SOCK_CLOEXEC', 1, 2 | SOCK_CLOEXEC],
    ['AF_INET, SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC', 2, 1 | SOCK_NONBLOCK | SOCK_CLOEXEC],
    ['AF_INET6, SOCK_DGRAM', 10, 2],
  ])('allows socket(%s)', (_what, domain, type) => {
    expect(decide(arch, 'socket', [BigInt(domain), BigInt(type), 0n])).toBe(SECCOMP_RET_ALLOW);
  });

  it('refuses the terminal-injection ioctls and allows the others', () => {
    expect(decide(arch, 'ioctl', [0n, 0x5412n])).toBe(EPERM); // TIOCSTI
    expect(decide(arch, 'ioctl', [0n, 0x541cn])).toBe(EPERM); // TIOCLINUX
    expect(decide(arch, 'ioctl', [0n, 0x5401n])).toBe(SECCOMP_RET_ALLOW); // TCGETS
  });

  it('allows syscall number -1 (the kernel answers ENOSYS; a tracer uses it to skip a call)', () => {
    expect(decide(arch, -1)).toBe(SECCOMP_RET_ALLOW);
  });

  it('allows every call it does not name', () => {
    const named = new Set(Object.values(table.numbers));
    for (let nr = 0; nr < 500; nr++) {
      if (!named.has(nr))
        expect(decide(arch, nr, [0xffffffffn, 0xffffffffn])).toBe(SECCOMP_RET_ALLOW);
    }
  });

  it('fits the kernel limits with every jump in range', () => {
    const program = compileSeccompPolicy(arch);
    expect(program.length).toBeLessThan(4096);
    expect(seccompProgram(arch).length).toBe(program.length * 8);
  });
});

describe('the x86_64 program and the x32 ABI', () => {
  it('kills any call numbered with the x32 bit, even one it would allow', () => {
    const program = decodeProgram(seccompProgram('x86_64'));
    const audit = SYSCALL_TABLES.x86_64.auditArch;
    for (const nr of [0x40000000, 0x40000000 | 39, 0x40000000 | 101, 0x7fffffff]) {
      expect(runSeccomp(program, { arch: audit, nr })).toBe(SECCOMP_RET_KILL_PROCESS);
    }
  });
});

describe('the policy data', () => {
  it('lists each refused call once, with its errno and reason', () => {
    const names = SECCOMP_REFUSED_SYSCALLS.map((rule) => rule.syscall);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(expect.arrayContaining([...ALWAYS_EPERM, 'clone', 'clone3', 'socket']));
    for (const rule of SECCOMP_REFUSED_SYSCALLS) expect(rule.reason.length).toBeGreaterThan(10);
  });

  it('refuses to compile a policy naming a call twice (the second rule could never apply)', () => {
    const ptrace = SECCOMP_REFUSED_SYSCALLS.find((rule) => rule.syscall === 'ptrace')!;
    expect(() => compileSeccompPolicy('x86_64', [ptrace, ptrace])).toThrow(/twice/);
  });
});

describe('choosing the architecture', () => {
  it('maps Node arch names and defaults to the running machine', () => {
    expect(seccompArchOf('x64')).toBe('x86_64');
    expect(seccompArchOf('arm64')).toBe('aarch64');
    if (process.arch === 'x64' || process.arch === 'arm64') {
      expect(hex(seccompProgram())).toBe(hex(seccompProgram(seccompArchOf(process.arch))));
    }
  });

  it.each(['ia32', 'arm', 'riscv64', 'ppc64', 's390x', 'toString', '__proto__'])(
    'refuses %s with a typed error naming it and the supported architectures',
    (arch) => {
      let thrown: unknown;
      try {
        seccompArchOf(arch);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(SeccompUnsupportedArchError);
      expect(thrown).toBeInstanceOf(SbxError);
      expect(isSbxError(thrown, 'SECCOMP_UNSUPPORTED_ARCH')).toBe(true);
      expect((thrown as Error).message).toContain(arch);
      expect((thrown as Error).message).toMatch(/x86_64 or aarch64/);
    },
  );

  it('refuses an architecture name the type does not allow, from an untyped caller', () => {
    expect(() => seccompProgram('mips' as SeccompArch)).toThrow(SeccompUnsupportedArchError);
    expect(() => seccompProgram('constructor' as SeccompArch)).toThrow(SeccompUnsupportedArchError);
  });

  it('hands out a fresh buffer, so a caller consuming it cannot change the next program', () => {
    const first = seccompProgram('x86_64');
    const expected = hex(first);
    first.fill(0);
    expect(hex(seccompProgram('x86_64'))).toBe(expected);
  });
});

// The numbers are ABI and were copied from these headers; re-reading them catches a typo.
const HEADERS: Readonly<Record<SeccompArch, string>> = {
  x86_64: '/usr/include/x86_64-linux-gnu/asm/unistd_64.h',
  aarch64: '/usr/include/asm-generic/unistd.h',
};

describe.each(ARCHES)('the %s syscall numbers', (arch) => {
  const header = HEADERS[arch];
  const present = existsSync(header);
  if (!present) console.warn(`[sbx] skipping the ${arch} number check: ${header} is not installed`);
  it.skipIf(!present)(`match ${header}`, () => {
    const text = readFileSync(header, 'utf8');
    for (const [name, nr] of Object.entries(SYSCALL_TABLES[arch].numbers)) {
      const match = new RegExp(`^#define __NR_${name}\\s+(\\d+)\\s*$`, 'm').exec(text);
      expect(match, `__NR_${name} in ${header}`).not.toBeNull();
      expect(Number(match![1]), name).toBe(nr);
    }
  });
});
