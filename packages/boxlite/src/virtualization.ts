import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { SandboxRuntimeError } from '@sbx/core';
import type { SbxErrorOptions } from '@sbx/core';

/** The device a local BoxLite runtime needs on Linux. */
export const KVM_DEVICE = '/dev/kvm';

/** `fs.promises.access`-shaped probe, injectable so tests can describe any host. */
export type FsAccessProbe = (path: string, mode: number) => Promise<void>;

export type VirtualizationProblem = 'kvm-absent' | 'kvm-inaccessible' | 'unsupported-platform';

/**
 * The host cannot run BoxLite micro-VMs locally. A runtime error (code `SANDBOX_RUNTIME`), so
 * callers that branch on runtime misconfiguration need no new case; `problem` says which.
 */
export class VirtualizationUnavailableError extends SandboxRuntimeError {
  readonly problem: VirtualizationProblem;
  readonly device: string | undefined;
  constructor(
    message: string,
    problem: VirtualizationProblem,
    device?: string,
    options: SbxErrorOptions = {},
  ) {
    super(message, options);
    this.problem = problem;
    this.device = device;
  }
}

const REMEDY =
  'BoxLite runs micro-VMs and needs hardware virtualisation: a Linux host with KVM enabled ' +
  '(and read/write access to /dev/kvm for this user) or an Apple Silicon Mac';

/**
 * Checks, before the runtime is constructed, that this host can run micro-VMs: on Linux `/dev/kvm`
 * must exist and be readable and writable; macOS uses Hypervisor.framework (nothing to probe);
 * other platforms are unsupported. Failing here gives a clear error instead of a native one from
 * deep inside the first box creation.
 *
 * @throws VirtualizationUnavailableError
 */
export async function assertVirtualizationAvailable(
  options: { probe?: FsAccessProbe; platform?: NodeJS.Platform; device?: string } = {},
): Promise<void> {
  const platform = options.platform ?? process.platform;
  const device = options.device ?? KVM_DEVICE;
  if (platform === 'darwin') return;
  if (platform !== 'linux') {
    throw new VirtualizationUnavailableError(
      `BoxLite is not supported on ${platform}. ${REMEDY}.`,
      'unsupported-platform',
    );
  }
  const probe = options.probe ?? access;
  try {
    await probe(device, constants.R_OK | constants.W_OK);
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === 'ENOENT') {
      throw new VirtualizationUnavailableError(
        `KVM is not available on this host: ${device} does not exist. ${REMEDY}.`,
        'kvm-absent',
        device,
        { cause: error },
      );
    }
    throw new VirtualizationUnavailableError(
      `KVM is not available on this host: ${device} is not accessible (${String(code ?? (error as Error)?.message ?? error)}). ${REMEDY}.`,
      'kvm-inaccessible',
      device,
      { cause: error },
    );
  }
}
