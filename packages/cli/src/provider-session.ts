import {
  errorMessage,
  createToolContext,
  existingMounts,
  loadProviderClass,
  toolConfigFromSandboxConfig,
  type Logger,
  type ModuleImporter,
  type SandboxAuthorizer,
  type SandboxConfig,
  type SandboxProvider,
  type ToolContext,
  type ToolSession,
} from '@sbx/core';
import { isHostDirectoryProvider } from './host-directory-provider.js';

/**
 * Builds the provider `config.use` names, the way a host application would (`{ config, logger }`).
 * `allowHostBash` overrides `sandbox.allow_host_bash` for this process only.
 */
export async function openProvider(
  config: SandboxConfig,
  options: {
    logger: Logger;
    allowHostBash?: boolean | undefined;
    importer?: ModuleImporter | undefined;
    /** `false` for inspection commands: see core `SandboxProviderInit.background`. */
    background?: boolean | undefined;
  },
): Promise<SandboxProvider> {
  const effective =
    options.allowHostBash === undefined
      ? config
      : Object.freeze({ ...config, allowHostBash: options.allowHostBash });
  const loaded = await loadProviderClass(effective.use, { importer: options.importer });
  return loaded.create({
    config: effective,
    logger: options.logger,
    ...(options.background === undefined ? {} : { background: options.background }),
  });
}

export interface ToolContextOptions {
  userId: string;
  threadId: string;
  logger: Logger;
  allowHostBash?: boolean | undefined;
  /** Overrides `sandbox.tools.process_tools` for this context. */
  processTools?: boolean | undefined;
  authorize?: SandboxAuthorizer | undefined;
  signal?: AbortSignal | undefined;
  /** The read-before-write marks to start from (default: a fresh session). */
  session?: ToolSession | undefined;
}

/**
 * A tool context for one user/thread. For a host-directory provider it also carries the thread's
 * host directories and the configured mounts, which the tool layer needs to confine file paths and
 * to mask host paths in results.
 */
export async function toolContextFor(
  provider: SandboxProvider,
  config: SandboxConfig,
  options: ToolContextOptions,
): Promise<ToolContext> {
  const toolConfig = toolConfigFromSandboxConfig(config);
  if (options.allowHostBash !== undefined) toolConfig.allowHostBash = options.allowHostBash;
  if (options.processTools !== undefined) toolConfig.processTools = options.processTools;
  const local = isHostDirectoryProvider(provider)
    ? {
        threadData: provider.threadData(options.userId, options.threadId),
        skillsContainerPath: provider.skillsContainerPath,
        customMounts: (await existingMounts(config.mounts)).map((m) => ({
          containerPath: m.containerPath,
          readOnly: m.readOnly,
        })),
      }
    : undefined;
  return createToolContext({
    provider,
    userId: options.userId,
    threadId: options.threadId,
    config: toolConfig,
    logger: options.logger,
    ...(local ? { local } : {}),
    ...(options.authorize ? { authorize: options.authorize } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.session ? { session: options.session } : {}),
  });
}

/**
 * Ends a CLI run's use of its provider: the thread's sandbox is released (the provider decides
 * what that means: nothing for the host provider, parking or stopping for others), then the
 * provider shuts down. Both always run. A failure here is logged, not thrown: the command's own
 * result (a command's output and status) has already been produced and stays what it was.
 */
export async function closeProviderSession(
  provider: SandboxProvider,
  sandboxId: string | undefined,
  logger: Logger,
): Promise<void> {
  const describe = (err: unknown): string => errorMessage(err);
  if (sandboxId !== undefined) {
    try {
      await provider.release(sandboxId);
    } catch (err) {
      logger.error('releasing the sandbox failed', { sandboxId, error: describe(err) });
    }
  }
  try {
    await provider.shutdown();
  } catch (err) {
    logger.error('shutting the provider down failed', { error: describe(err) });
  }
}
