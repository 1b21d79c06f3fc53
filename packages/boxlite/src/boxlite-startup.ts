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

/**
 * The provider's runtime, opened once on first use, and the start-up reconciliation over it, run
 * once before the first acquire. A failed open is forgotten, so the next call opens again (e.g.
 * after installing the SDK); the reconciliation only logs its errors, so it never fails a call.
 */
export class BoxliteStartup {
  readonly #open: () => Promise<BoxliteRuntime>;
  readonly #reconcile: (runtime: BoxliteRuntime) => Promise<void>;
  #runtime: Promise<BoxliteRuntime> | undefined;
  #reconciled: Promise<BoxliteRuntime> | undefined;

  constructor(
    open: () => Promise<BoxliteRuntime>,
    reconcile: (runtime: BoxliteRuntime) => Promise<void>,
  ) {
    this.#open = open;
    this.#reconcile = reconcile;
  }

  /**
   * The runtime, opened, without the reconciliation: a listing must not adopt boxes, which would
   * hand them to the shutdown of an inspecting process (`sbx ls`).
   */
  runtime(): Promise<BoxliteRuntime> {
    if (this.#runtime === undefined) {
      const opening = this.#open();
      this.#runtime = opening;
      // A failed open is retried by the next call (e.g. after installing the SDK).
      opening.catch(() => {
        if (this.#runtime === opening) this.#runtime = undefined;
      });
    }
    return this.#runtime;
  }

  /** The runtime after the start-up reconciliation, which runs once, before the first acquire. */
  reconciled(): Promise<BoxliteRuntime> {
    if (this.#reconciled === undefined) {
      const pass = this.runtime().then(async (runtime) => {
        await this.#reconcile(runtime);
        return runtime;
      });
      this.#reconciled = pass;
      // Only opening can fail (reconciliation logs its errors); the next acquire opens again.
      pass.catch(() => {
        if (this.#reconciled === pass) this.#reconciled = undefined;
      });
    }
    return this.#reconciled;
  }

  /** The reconciliation, in flight or done, once an acquire began it. */
  get reconciling(): Promise<BoxliteRuntime> | undefined {
    return this.#reconciled;
  }

  /** The runtime once opening began (to close at shutdown); `undefined` if it never did. */
  get opened(): Promise<BoxliteRuntime> | undefined {
    return this.#runtime;
  }
}
