import type { Clock, Logger, ModuleImporter, SandboxProviderInit, SandboxSpec } from '@sbx/core';
import {
  VIRTUAL_OUTPUTS_PATH,
  VIRTUAL_UPLOADS_PATH,
  VIRTUAL_WORKSPACE_PATH,
} from '@sbx/core/internal';
import type { OpenSandboxProviderConfig } from './opensandbox-config.js';
import type { OpenSandboxSandbox } from './opensandbox-sandbox.js';
import type { OpenSandboxSdk } from './opensandbox-sdk.js';

/** Tags every remote carries; the names are the reference implementation's, for operators' filters. */
export const OPENSANDBOX_METADATA = {
  provider: 'deer_flow_provider',
  thread: 'deer_flow_thread',
  user: 'deer_flow_user',
} as const;
export const OPENSANDBOX_PROVIDER_TAG_VALUE = 'opensandbox';

export const PROVIDER_SHUT_DOWN_MESSAGE = 'OpenSandboxProvider has been shut down';
export const PROVIDER_SHUT_DOWN_DURING_ACQUIRE_MESSAGE =
  'OpenSandboxProvider shut down during acquire';

/** Sandboxes asked for per page when listing. */
export const LIST_PAGE_SIZE = 100;

/** Directories every new remote gets before it is handed out. */
export const BOOTSTRAP_DIRECTORIES = [
  VIRTUAL_WORKSPACE_PATH,
  VIRTUAL_UPLOADS_PATH,
  VIRTUAL_OUTPUTS_PATH,
] as const;

/** The (user, thread) a sandbox was created for. */
export interface OpenSandboxIdentity {
  readonly userId: string;
  readonly threadId: string;
  /** An acquire's spec labels, written as sandbox metadata (not part of the identity). */
  readonly labels?: Readonly<Record<string, string>> | undefined;
  /** An acquire's spec image and resources (part of the id). */
  readonly spec?: SandboxSpec | undefined;
}

export interface OpenSandboxProviderOptions extends Omit<SandboxProviderInit, 'config'> {
  /** The parsed `sandbox` configuration (`SandboxConfig` of @sbx/core, or the parts read here). */
  readonly config?: OpenSandboxProviderConfig;
  /**
   * The SDK module (or a function loading it). Default: `@alibaba-group/opensandbox`, imported on
   * the first acquire. Tests inject an in-memory fake here.
   */
  readonly sdk?: OpenSandboxSdk | (() => Promise<OpenSandboxSdk>);
  /** Imports the default SDK; default a dynamic `import()`. */
  readonly importer?: ModuleImporter;
  /** Drives idle expiry, lifetimes and command deadlines. Default: the system clock. */
  readonly clock?: Clock;
  /** Consulted for `OPEN_SANDBOX_API_KEY` / `OPEN_SANDBOX_DOMAIN` in the startup warnings. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Largest `downloadFile`; default 100 MiB. */
  readonly maxDownloadBytes?: number;
}

/** A released sandbox waiting in the warm pool for its (user, thread). */
export interface WarmOpenSandbox {
  readonly sandbox: OpenSandboxSandbox;
  readonly identity: OpenSandboxIdentity;
}

export interface ActiveSandbox {
  readonly sandbox: OpenSandboxSandbox;
  /** `undefined` for an anonymous (thread-less) sandbox. */
  readonly identity: OpenSandboxIdentity | undefined;
}

/** What this instance knows of a remote it tracks, for a listing. */
export interface TrackedRemote {
  readonly state: 'active' | 'warm';
  readonly identity: OpenSandboxIdentity | undefined;
  readonly releasedAt?: number;
}

/** Warnings the specification requires are printed by default; nothing else is. */
export const requiredLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: (msg, fields) => console.warn(`[sbx/opensandbox] ${msg}`, fields ?? ''),
  error: (msg, fields) => console.error(`[sbx/opensandbox] ${msg}`, fields ?? ''),
};

/** Names a sandbox of unknown identity in collision errors. */
export const UNKNOWN_IDENTITY = 'an anonymous sandbox';
