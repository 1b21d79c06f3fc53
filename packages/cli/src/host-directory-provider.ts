import type { SandboxProvider, ThreadDataPaths } from '@sbx/core';

/**
 * A provider whose sandboxes are directories on this host (`@sbx/local`, or anything shaped like
 * it). Recognised by shape rather than `instanceof`, so a second copy of @sbx/local in an
 * application's dependency tree still counts.
 */
export interface HostDirectoryProvider extends SandboxProvider {
  readonly baseDir: string;
  readonly skillsContainerPath: string;
  threadData(userId: string | undefined, threadId: string): ThreadDataPaths;
}

export function isHostDirectoryProvider(
  provider: SandboxProvider,
): provider is HostDirectoryProvider {
  const p = provider as Partial<Record<keyof HostDirectoryProvider, unknown>>;
  return (
    typeof p.baseDir === 'string' &&
    typeof p.skillsContainerPath === 'string' &&
    typeof p.threadData === 'function'
  );
}

/**
 * Whether a host provider runs commands confined (`@sbx/local` with bubblewrap): bash and the
 * process tools are then on without host bash, since a command sees only its sandbox.
 */
export function isConfinedProvider(provider: SandboxProvider): boolean {
  return (provider as { confined?: unknown }).confined === true;
}
