import type { SandboxConfig } from '../config/config.js';
import { loadSandboxConfig, parseSandboxConfig } from '../config/config-loader.js';
import type { Logger } from '../logging/logger.js';
import type { ModuleImporter } from './provider-loader.js';
import { loadProviderClass } from './provider-loader.js';
import type { SandboxProvider } from '../contract/sandbox-provider.js';
import { errorMessage } from '../errors/error-inspection.js';

/**
 * The process-wide default provider. The only shared state is one reference, and every read or
 * swap of it happens in a synchronous stretch of code, which on Node's single thread is the
 * critical section: nothing else can interleave until the next `await`. Everything slow —
 * config loading, `import()`, construction, `reset()`, `shutdown()`, listeners — runs outside it.
 */

/** Environment variable naming a config file read on a cold start when no config is passed. */
export const SBX_CONFIG_PATH_ENV = 'SBX_CONFIG_PATH';

export type ProviderDetachReason = 'reset' | 'shutdown' | 'replaced';

/**
 * Told when a provider stops being the default, so per-provider state kept elsewhere (e.g. a lease
 * manager registry keyed by provider identity) can be dropped. Runs before the detached provider's
 * `reset()` / `shutdown()`; never for a cold-start loser, which was never the default.
 */
export type ProviderDetachedListener = (
  provider: SandboxProvider,
  reason: ProviderDetachReason,
) => void | Promise<void>;

export interface GetSandboxProviderOptions {
  /**
   * Configuration for a cold start (ignored when a provider is installed): a parsed config or a
   * function producing one. Default: the file named by `SBX_CONFIG_PATH`, else built-in defaults
   * (the `@sbx/local` provider).
   */
  config?: SandboxConfig | (() => SandboxConfig | Promise<SandboxConfig>);
  importer?: ModuleImporter;
  /** Passed to the provider, and told about a cold-start loser whose shutdown failed. */
  logger?: Logger;
}

export interface DefaultProviderLifecycleOptions {
  /** Told about listeners that failed. Default: a Node process warning. */
  logger?: Logger;
}

let installed: SandboxProvider | undefined;
const listeners = new Set<ProviderDetachedListener>();

/**
 * Faults that must not fail the caller (it has what it asked for) but must not vanish either: the
 * host's logger when given, otherwise Node's warning channel, which prints by default.
 */
function reportFault(logger: Logger | undefined, message: string, err: unknown): void {
  const error = errorMessage(err);
  if (logger) logger.error(message, { error });
  else process.emitWarning(`${message}: ${error}`, { code: 'SBX_DEFAULT_PROVIDER' });
}

async function resolveConfig(option: GetSandboxProviderOptions['config']): Promise<SandboxConfig> {
  if (option === undefined) {
    const file = process.env[SBX_CONFIG_PATH_ENV];
    return file ? loadSandboxConfig({ path: file }) : parseSandboxConfig({});
  }
  return typeof option === 'function' ? option() : option;
}

async function notifyDetached(
  provider: SandboxProvider,
  reason: ProviderDetachReason,
  logger: Logger | undefined,
): Promise<void> {
  // Snapshot: a listener unsubscribing itself (or another) must not skip anyone this round.
  const results = await Promise.allSettled(
    [...listeners].map(async (listener) => listener(provider, reason)),
  );
  for (const r of results) {
    if (r.status === 'rejected') {
      reportFault(logger, `sandbox provider detach listener failed (${reason})`, r.reason);
    }
  }
}

/**
 * The default provider, built on first use from `config.use`. Concurrent cold callers each build
 * their own instance; the first to finish is installed and every caller receives it; each other
 * instance is shut down exactly once; the installed one never. A failed build fails only its
 * caller.
 */
export async function getSandboxProvider(
  options: GetSandboxProviderOptions = {},
): Promise<SandboxProvider> {
  const current = installed;
  if (current) return current;

  const config = await resolveConfig(options.config);
  const loaded = await loadProviderClass(config.use, { importer: options.importer });
  const built = await loaded.create({ config, logger: options.logger });

  const winner = installed;
  if (winner === undefined) {
    installed = built;
    return built;
  }
  if (winner !== built) {
    try {
      await built.shutdown();
    } catch (err) {
      reportFault(options.logger, 'shutting down a discarded sandbox provider failed', err);
    }
  }
  return winner;
}

/** The installed default provider, without building one. */
export function getInstalledSandboxProvider(): SandboxProvider | undefined {
  return installed;
}

/**
 * Detaches the default provider and then calls its `reset()`; the next `getSandboxProvider()` builds
 * a fresh one (so config or mount changes take effect). The detached instance must not be reused.
 * Errors from `reset()` propagate.
 */
export async function resetSandboxProvider(
  options: DefaultProviderLifecycleOptions = {},
): Promise<void> {
  const provider = installed;
  if (!provider) return;
  installed = undefined;
  await notifyDetached(provider, 'reset', options.logger);
  await provider.reset();
}

/** Detaches the default provider and then calls its `shutdown()`. Errors from `shutdown()` propagate. */
export async function shutdownSandboxProvider(
  options: DefaultProviderLifecycleOptions = {},
): Promise<void> {
  const provider = installed;
  if (!provider) return;
  installed = undefined;
  await notifyDetached(provider, 'shutdown', options.logger);
  await provider.shutdown();
}

/**
 * Installs `provider` as the default. The replaced instance is NOT shut down: whoever created it
 * owns it. Listeners are told it was replaced.
 */
export async function setSandboxProvider(
  provider: SandboxProvider,
  options: DefaultProviderLifecycleOptions = {},
): Promise<void> {
  const previous = installed;
  installed = provider;
  if (previous && previous !== provider) {
    await notifyDetached(previous, 'replaced', options.logger);
  }
}

/** Subscribes to "this provider is no longer the default"; returns the unsubscribe function. */
export function onProviderDetached(listener: ProviderDetachedListener): () => void {
  // Wrapped so subscribing the same function twice yields two independent subscriptions.
  const entry: ProviderDetachedListener = (p, r) => listener(p, r);
  listeners.add(entry);
  return () => {
    listeners.delete(entry);
  };
}
