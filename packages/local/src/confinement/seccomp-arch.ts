import { SbxError } from '@sbx/core';
import { SECCOMP_ARCHES, type SeccompArch } from './seccomp-syscalls.js';

/** No seccomp program exists for the machine's architecture, so commands cannot be confined. */
export class SeccompUnsupportedArchError extends SbxError {
  static override readonly CODE = 'SECCOMP_UNSUPPORTED_ARCH';
  readonly arch: string;
  constructor(arch: string) {
    super(
      `No seccomp filter for architecture ${JSON.stringify(arch)}: confined execution needs x86_64 or aarch64`,
      { details: { arch } },
    );
    this.arch = arch;
  }
}

const NODE_ARCHES: Readonly<Record<string, SeccompArch>> = { x64: 'x86_64', arm64: 'aarch64' };

/** The filter architecture of a Node `process.arch` value. */
export function seccompArchOf(nodeArch: string): SeccompArch {
  const arch = Object.hasOwn(NODE_ARCHES, nodeArch) ? NODE_ARCHES[nodeArch] : undefined;
  if (arch === undefined) throw new SeccompUnsupportedArchError(nodeArch);
  return arch;
}

/** Checks a caller-supplied architecture name (config, CLI) once. */
export function checkSeccompArch(arch: unknown): SeccompArch {
  if (typeof arch === 'string' && (SECCOMP_ARCHES as readonly string[]).includes(arch)) {
    return arch as SeccompArch;
  }
  throw new SeccompUnsupportedArchError(String(arch));
}
