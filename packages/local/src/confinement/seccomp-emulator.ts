import {
  BPF_ABS,
  BPF_ALU,
  BPF_AND,
  BPF_JEQ,
  BPF_JGE,
  BPF_JMP,
  BPF_JSET,
  BPF_K,
  BPF_LD,
  BPF_RET,
  BPF_W,
  type SockFilter,
} from './seccomp-bpf.js';

/**
 * A classic-BPF interpreter for the instructions seccomp programs use, so tests can ask what the
 * program decides for a call on an architecture this machine cannot run (aarch64 on an x86_64
 * runner) and for argument values no real probe would send. It follows the kernel's semantics
 * (unsigned 32-bit accumulator, forward-only jumps, word loads from `struct seccomp_data`) and
 * throws on anything else, so it cannot quietly accept a program the kernel would refuse.
 */

export interface SeccompCall {
  readonly arch: number;
  readonly nr: number;
  readonly args?: readonly bigint[];
  readonly instructionPointer?: bigint;
}

const SECCOMP_DATA_BYTES = 64;

export function seccompData(call: SeccompCall): Buffer {
  const data = Buffer.alloc(SECCOMP_DATA_BYTES);
  data.writeInt32LE(call.nr | 0, 0);
  data.writeUInt32LE(call.arch >>> 0, 4);
  data.writeBigUInt64LE(call.instructionPointer ?? 0n, 8);
  (call.args ?? []).forEach((value, i) =>
    data.writeBigUInt64LE(BigInt.asUintN(64, value), 16 + 8 * i),
  );
  return data;
}

export function runSeccomp(program: readonly SockFilter[], call: SeccompCall): number {
  const data = seccompData(call);
  let a = 0;
  for (let pc = 0; pc < program.length; pc++) {
    const ins = program[pc]!;
    switch (ins.code) {
      case BPF_LD | BPF_W | BPF_ABS:
        if (ins.k % 4 !== 0 || ins.k + 4 > SECCOMP_DATA_BYTES) {
          throw new Error(`load of seccomp_data at ${ins.k} is out of bounds or unaligned`);
        }
        a = data.readUInt32LE(ins.k);
        break;
      case BPF_ALU | BPF_AND | BPF_K:
        a = (a & ins.k) >>> 0;
        break;
      case BPF_JMP | BPF_JEQ | BPF_K:
        pc += a === ins.k ? ins.jt : ins.jf;
        break;
      case BPF_JMP | BPF_JGE | BPF_K:
        pc += a >= ins.k ? ins.jt : ins.jf;
        break;
      case BPF_JMP | BPF_JSET | BPF_K:
        pc += (a & ins.k) !== 0 ? ins.jt : ins.jf;
        break;
      case BPF_RET | BPF_K:
        return ins.k >>> 0;
      default:
        throw new Error(
          `instruction ${pc} has an opcode this interpreter does not know: ${ins.code}`,
        );
    }
  }
  throw new Error(
    'the program ran off its end without returning (the kernel refuses such programs)',
  );
}
