import { errorMessage } from '@sbx/core';
import type { ModuleImporter, SandboxConfig } from '@sbx/core';
import type { CliIo } from './cli-io.js';
import type { DoctorCheck } from './doctor-checks.js';
import type { DockerEndpoint } from './docker-probe.js';
import type { PackageFinder } from './installed-packages.js';

/** What every doctor probe gets, and the shape of its answer. */
export type Check = Omit<DoctorCheck, 'required' | 'group'>;

export interface ProbeContext {
  readonly io: CliIo;
  readonly config: SandboxConfig;
  readonly findPackage: PackageFinder;
  readonly dockerEndpoint: DockerEndpoint | undefined;
  readonly kvmPath: string;
  readonly platform: NodeJS.Platform;
  readonly arch: string;
  readonly probeSignal: () => AbortSignal;
  readonly onProgress: (label: string) => void;
  readonly importer: ModuleImporter | undefined;
}

export function portOf(url: string): string {
  try {
    return new URL(url).port || '6379';
  } catch {
    return '6379';
  }
}

export function describe(err: unknown): string {
  return errorMessage(err);
}

export function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * Image the AIO provider starts when `sandbox.image` is not set (the all-in-one sandbox image of
 * the reference deployment).
 */
export const DEFAULT_AIO_IMAGE =
  'enterprise-public-cn-beijing.cr.volces.com/vefaas-public/all-in-one-sandbox:latest';
