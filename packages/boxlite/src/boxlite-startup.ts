import type { Logger } from '@sbx/core';
import type { WarmPoolRegistry } from '@sbx/core/provider-kit';
import type { BoxliteSettings } from './boxlite-config.js';
import { sandboxIdOfBox } from './boxlite-listing.js';
import type { ActiveBox, BoxliteProviderOptions, WarmBox } from './boxlite-provider-types.js';
import type { BoxliteRuntime } from './boxlite-runtime.js';
import type { BoxliteSandbox } from './boxlite-sandbox.js';
import { createSdkBoxliteRuntime } from './sdk-runtime.js';

/** The runtime the options give (or a function opening it), else the real SDK runtime. */
export async function openBoxliteRuntime(
  options: BoxliteProviderOptions,
  settings: BoxliteSettings,
  logger: Logger,
): Promise<BoxliteRuntime> {
  const given = options.runtime;
  if (typeof given === 'function') return given();
  return (
    given ??
    createSdkBoxliteRuntime({
      homeDir: settings.homeDir,
      logger,
      ...(options.importer ? { importer: options.importer } : {}),
      ...(options.fsAccess ? { fsAccess: options.fsAccess } : {}),
      ...(options.platform ? { platform: options.platform } : {}),
    })
  );
}

/**
 * The start-up reconciliation: adopts boxes of this prefix left running by an earlier process
 * into the warm pool, identity unknown: they are reused only after a health check, and otherwise
 * idle out like any warm box. Errors are logged; a failed reconciliation never blocks acquisition.
 */
export async function adoptLeftoverBoxes(
  runtime: BoxliteRuntime,
  into: {
    readonly registry: WarmPoolRegistry<ActiveBox, WarmBox>;
    readonly prefix: string;
    readonly adapter: (id: string, box: BoxliteSandbox['box']) => BoxliteSandbox;
    readonly onAdopt: (id: string) => void;
    readonly logger: Logger;
  },
): Promise<void> {
  const { registry, logger } = into;
  let boxes;
  try {
    boxes = await runtime.list();
  } catch (error) {
    logger.warn('Could not list BoxLite boxes for reconciliation', { error });
    return;
  }
  for (const info of boxes) {
    const name = info.name;
    const id = sandboxIdOfBox(into.prefix, name);
    if (name === undefined || id === undefined) continue;
    if (registry.active.has(id) || registry.pool.has(id)) continue;
    try {
      const box = await runtime.get(name);
      if (box === undefined) continue;
      registry.pool.put(id, {
        sandbox: into.adapter(id, box),
        identity: undefined,
      });
      logger.info('Adopted BoxLite box into the warm pool', { sandboxId: id, box: name });
      into.onAdopt(id);
    } catch (error) {
      logger.warn('Could not adopt BoxLite box', { box: name, error });
    }
  }
}
