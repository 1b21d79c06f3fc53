/**
 * Classic BPF as the kernel's seccomp loader reads it: an array of `struct sock_filter
 * { __u16 code; __u8 jt; __u8 jf; __u32 k; }`, 8 bytes each, in the machine's byte order
 * (little-endian on every architecture the filter supports). Only the instructions a seccomp
 * policy needs are here; the kernel's verifier (`seccomp_check_filter`) rejects anything else at
 * load time, so an encoding mistake fails loudly at `bwrap --seccomp`, never silently.
 */

// Instruction classes and fields, from include/uapi/linux/bpf_common.h.
export const BPF_LD = 0x00;
export const BPF_ALU = 0x04;
export const BPF_JMP = 0x05;
export const BPF_RET = 0x06;
export const BPF_W = 0x00;
export const BPF_ABS = 0x20;
export const BPF_AND = 0x50;
export const BPF_JEQ = 0x10;
export const BPF_JGE = 0x30;
export const BPF_JSET = 0x40;
export const BPF_K = 0x00;

// Return values, from include/uapi/linux/seccomp.h.
export const SECCOMP_RET_KILL_PROCESS = 0x80000000;
export const SECCOMP_RET_ERRNO = 0x00050000;
export const SECCOMP_RET_ALLOW = 0x7fff0000;
/** The errno travels in the low 16 bits of an ERRNO return. */
export const SECCOMP_RET_DATA = 0x0000ffff;

/** The kernel refuses longer programs (BPF_MAXINSNS). */
export const BPF_MAX_INSTRUCTIONS = 4096;
/** `jt`/`jf` are one byte: a conditional jump skips at most this many instructions. */
export const BPF_MAX_JUMP = 255;
export const SOCK_FILTER_BYTES = 8;

/** One encoded instruction. */
export interface SockFilter {
  readonly code: number;
  readonly jt: number;
  readonly jf: number;
  readonly k: number;
}

/** Where a conditional jump goes: the next instruction, or a label placed later in the program. */
export type JumpTarget = { readonly label: string } | 'next';

type Pending =
  | { readonly kind: 'stmt'; readonly code: number; readonly k: number }
  | {
      readonly kind: 'jump';
      readonly code: number;
      readonly k: number;
      readonly jt: JumpTarget;
      readonly jf: JumpTarget;
    };

function checkU32(value: number, what: string): number {
  if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) {
    throw new RangeError(`${what} must be an unsigned 32-bit integer, got ${value}`);
  }
  return value;
}

/**
 * A forward-only assembler: labels name the instruction that follows them, and a jump may only go
 * forward (classic BPF has no backward jumps, which is what guarantees the program ends). Offsets
 * are resolved in `assemble()`, which refuses a jump longer than one byte can hold rather than
 * truncating it into a jump to the wrong instruction.
 */
export class BpfAssembler {
  readonly #instructions: Pending[] = [];
  readonly #labels = new Map<string, number>();

  /** `A = seccomp_data[offset]` (a 32-bit word). */
  loadWord(offset: number): this {
    this.#instructions.push({
      kind: 'stmt',
      code: BPF_LD | BPF_W | BPF_ABS,
      k: checkU32(offset, 'offset'),
    });
    return this;
  }

  /** `A &= mask`. */
  and(mask: number): this {
    this.#instructions.push({
      kind: 'stmt',
      code: BPF_ALU | BPF_AND | BPF_K,
      k: checkU32(mask, 'mask'),
    });
    return this;
  }

  /** `if (A == k) goto jt else goto jf`. */
  jumpIfEqual(k: number, jt: JumpTarget, jf: JumpTarget = 'next'): this {
    return this.#jump(BPF_JMP | BPF_JEQ | BPF_K, k, jt, jf);
  }

  /** `if (A >= k) goto jt else goto jf` (unsigned). */
  jumpIfAtLeast(k: number, jt: JumpTarget, jf: JumpTarget = 'next'): this {
    return this.#jump(BPF_JMP | BPF_JGE | BPF_K, k, jt, jf);
  }

  /** `if (A & k) goto jt else goto jf`. */
  jumpIfAnySet(k: number, jt: JumpTarget, jf: JumpTarget = 'next'): this {
    return this.#jump(BPF_JMP | BPF_JSET | BPF_K, k, jt, jf);
  }

  ret(value: number): this {
    this.#instructions.push({
      kind: 'stmt',
      code: BPF_RET | BPF_K,
      k: checkU32(value, 'return value'),
    });
    return this;
  }

  label(name: string): this {
    if (this.#labels.has(name)) throw new Error(`BPF label ${name} placed twice`);
    this.#labels.set(name, this.#instructions.length);
    return this;
  }

  #jump(code: number, k: number, jt: JumpTarget, jf: JumpTarget): this {
    this.#instructions.push({ kind: 'jump', code, k: checkU32(k, 'jump operand'), jt, jf });
    return this;
  }

  #offset(from: number, target: JumpTarget): number {
    if (target === 'next') return 0;
    const to = this.#labels.get(target.label);
    if (to === undefined) throw new Error(`BPF label ${target.label} is never placed`);
    const offset = to - from - 1;
    if (offset < 0) throw new Error(`BPF jump to ${target.label} goes backwards`);
    if (offset > BPF_MAX_JUMP) {
      throw new Error(
        `BPF jump to ${target.label} spans ${offset} instructions (max ${BPF_MAX_JUMP})`,
      );
    }
    return offset;
  }

  assemble(): SockFilter[] {
    if (this.#instructions.length > BPF_MAX_INSTRUCTIONS) {
      throw new Error(
        `BPF program has ${this.#instructions.length} instructions (max ${BPF_MAX_INSTRUCTIONS})`,
      );
    }
    return this.#instructions.map((ins, at) =>
      ins.kind === 'stmt'
        ? { code: ins.code, jt: 0, jf: 0, k: ins.k }
        : { code: ins.code, jt: this.#offset(at, ins.jt), jf: this.#offset(at, ins.jf), k: ins.k },
    );
  }
}

/** The bytes `bwrap --seccomp FD` reads and hands to the kernel as the filter's `sock_fprog`. */
export function encodeProgram(program: readonly SockFilter[]): Buffer {
  const out = Buffer.alloc(program.length * SOCK_FILTER_BYTES);
  program.forEach((ins, i) => {
    const at = i * SOCK_FILTER_BYTES;
    out.writeUInt16LE(ins.code, at);
    out.writeUInt8(ins.jt, at + 2);
    out.writeUInt8(ins.jf, at + 3);
    out.writeUInt32LE(ins.k, at + 4);
  });
  return out;
}

/** The inverse of `encodeProgram`, for tests and for `sbx doctor` to describe a program. */
export function decodeProgram(bytes: Buffer): SockFilter[] {
  if (bytes.length % SOCK_FILTER_BYTES !== 0) {
    throw new Error(
      `a BPF program is a multiple of ${SOCK_FILTER_BYTES} bytes, got ${bytes.length}`,
    );
  }
  const out: SockFilter[] = [];
  for (let at = 0; at < bytes.length; at += SOCK_FILTER_BYTES) {
    out.push({
      code: bytes.readUInt16LE(at),
      jt: bytes.readUInt8(at + 2),
      jf: bytes.readUInt8(at + 3),
      k: bytes.readUInt32LE(at + 4),
    });
  }
  return out;
}
