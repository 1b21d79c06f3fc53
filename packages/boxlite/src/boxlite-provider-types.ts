import type { Clock, ModuleImporter, SandboxProviderInit, SandboxSpec } from '@sbx/core';
import type { BoxliteRuntime } from './boxlite-runtime.js';
import type { BoxliteSandbox } from './boxlite-sandbox.js';
import type { TerminalMarkers } from './terminal-errors.js';
import type { FsAccessProbe } from './virtualization.js';

/** The (user, thread) a box was created for. `undefined` on a box adopted at startup. */
export interface BoxIdentity {
  readonly userId: string;
  readonly threadId: string;
  /** The acquire's spec, checked: its image and resources are part of the id. */
  readonly spec?: SandboxSpec | undefined;
}

export interface BoxliteProviderOptions extends SandboxProviderInit {
  /**
   * The runtime, or a function opening it on first use. Default: the real SDK runtime
   * (`createSdkBoxliteRuntime`), opened on the first acquire.
   */
  readonly runtime?: BoxliteRuntime | (() => Promise<BoxliteRuntime>);
  /** Loads `@boxlite-ai/boxlite` for the default runtime; default a dynamic `import()`. */
  readonly importer?: ModuleImporter;
  /** Probe for `/dev/kvm` for the default runtime; default `fs.promises.access`. */
  readonly fsAccess?: FsAccessProbe;
  readonly platform?: NodeJS.Platform;
  /** Drives idle expiry, the reuse skip window and every deadline. Default: the system clock. */
  readonly clock?: Clock;
  /**
   * The sandbox id of (user, thread). Default: `deriveSandboxScopeToken` of `@sbx/core` (16 hex
   * characters of sha256("<user>:<thread>"), shared with every remote provider). Override only to
   * test collision handling or to migrate ids.
   */
  readonly deriveSandboxId?: (identity: BoxIdentity) => string;
  /** Overrides the terminal/retryable message markers (see `terminal-errors.ts`). */
  readonly terminalMarkers?: Partial<TerminalMarkers>;
}

/** A released box waiting in the warm pool. */
export interface WarmBox {
  readonly sandbox: BoxliteSandbox;
  /**
   * Unknown (`undefined`) for a box adopted at startup: any thread whose id matches may reclaim it,
   * after a health check. Known for a box this instance released, which is reused unchecked within
   * `health_check_skip_seconds`.
   */
  readonly identity: BoxIdentity | undefined;
}

export interface ActiveBox {
  readonly sandbox: BoxliteSandbox;
  /** `undefined` for anonymous (thread-less) boxes, which are never reclaimed. */
  readonly identity: BoxIdentity | undefined;
}
