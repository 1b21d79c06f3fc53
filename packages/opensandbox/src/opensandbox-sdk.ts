import { SandboxRuntimeError, loadOptionalDependency } from '@sbx/core';
import type { ModuleImporter } from '@sbx/core';

/**
 * The part of `@alibaba-group/opensandbox` (0.1.11) this package uses, declared structurally. The
 * provider only ever talks to an `OpenSandboxSdk`, so tests inject an in-memory fake with the same
 * shape, and the real SDK (an optional peer dependency) is imported only on the first acquire.
 */

/** npm name of the vendor SDK. */
export const OPENSANDBOX_SDK_PACKAGE = '@alibaba-group/opensandbox';
/** Named in the error when the SDK is missing. */
export const OPENSANDBOX_PROVIDER_PACKAGE = '@sbx/opensandbox';

export type OpenSandboxProtocol = 'http' | 'https';

/** `new ConnectionConfig(options)` of the SDK. */
export interface OpenSandboxConnectionOptions {
  domain?: string;
  protocol?: OpenSandboxProtocol;
  apiKey?: string;
  requestTimeoutSeconds?: number;
  useServerProxy?: boolean;
  disableMetrics?: boolean;
}

/** A `ConnectionConfig` instance; the provider builds one per remote and reads nothing back. */
export interface OpenSandboxConnectionConfig {
  readonly domain: string;
  readonly protocol: OpenSandboxProtocol;
  readonly apiKey?: string | undefined;
  readonly requestTimeoutSeconds: number;
  readonly useServerProxy: boolean;
}

/** One streamed output line (execd sends one event per line, without its terminator). */
export interface OpenSandboxOutputMessage {
  text: string;
}

export interface OpenSandboxExecutionError {
  name: string;
  value: string;
  traceback?: string[];
}

/** `CommandExecution` of the SDK: the accumulated events of one `commands.run`. */
export interface OpenSandboxExecution {
  logs: { stdout: OpenSandboxOutputMessage[]; stderr: OpenSandboxOutputMessage[] };
  result: { text?: string | undefined }[];
  error?: OpenSandboxExecutionError | undefined;
  complete?: unknown;
  /** Inferred by the SDK: an error's integer value, 0 after completion, otherwise null. */
  exitCode?: number | null | undefined;
}

/** `RunCommandOpts` of the SDK (the fields used here). */
export interface OpenSandboxRunOptions {
  /** Sent to execd in milliseconds; execd kills the command's process group when it elapses. */
  timeoutSeconds?: number;
  envs?: Record<string, string>;
  workingDirectory?: string;
}

/** `ExecutionHandlers` of the SDK (the fields used here): one call per execd line event. */
export interface OpenSandboxHandlers {
  /** The command's execd id, first of all events. */
  onInit?: (init: { id: string }) => void | Promise<void>;
  onStdout?: (message: OpenSandboxOutputMessage) => void | Promise<void>;
  onStderr?: (message: OpenSandboxOutputMessage) => void | Promise<void>;
}

export interface OpenSandboxCommands {
  run(
    command: string,
    options?: OpenSandboxRunOptions,
    handlers?: OpenSandboxHandlers,
    signal?: AbortSignal,
  ): Promise<OpenSandboxExecution>;
  /** Kills a running command by its execd id (`DELETE /command?id=`). */
  interrupt?(commandId: string): Promise<void>;
}

/** `WriteEntry` of the SDK: `mode` is written as octal digits in decimal (644 = rw-r--r--). */
export interface OpenSandboxWriteEntry {
  path: string;
  data: string | Uint8Array;
  mode?: number;
}

export interface OpenSandboxFiles {
  readBytes(path: string): Promise<Uint8Array>;
  readBytesStream(path: string): AsyncIterable<Uint8Array>;
  writeFiles(entries: OpenSandboxWriteEntry[]): Promise<void>;
}

/** A `Sandbox` instance of the SDK: one remote sandbox and the transport that reaches it. */
export interface OpenSandboxRemote {
  /** The server-assigned id. */
  readonly id: string;
  readonly commands: OpenSandboxCommands;
  readonly files: OpenSandboxFiles;
  /** Sets the absolute expiry to now + `timeoutSeconds`. */
  renew(timeoutSeconds: number): Promise<unknown>;
  /** Deletes the remote sandbox. */
  kill(): Promise<void>;
  /** Closes the transport (the per-config HTTP agent); the sandbox keeps running. */
  close(): Promise<void>;
}

/** `SandboxCreateOptions` of the SDK (the fields used here). */
export interface OpenSandboxCreateOptions {
  image: string;
  connectionConfig: OpenSandboxConnectionConfig;
  env?: Record<string, string>;
  metadata?: Record<string, string>;
  /** Seconds until the server reaps the sandbox; `null` = explicit cleanup only. */
  timeoutSeconds: number | null;
  readyTimeoutSeconds?: number;
  /** Resource limits (`resourceLimits`), Kubernetes quantities: `{ cpu: '2', memory: '4096Mi' }`. */
  resource?: Record<string, string>;
}

export interface OpenSandboxSandboxStatic {
  create(options: OpenSandboxCreateOptions): Promise<OpenSandboxRemote>;
}

/** `SandboxInfo` of the SDK (the fields read here). */
export interface OpenSandboxSandboxInfo {
  readonly id: string;
  readonly image?: { readonly uri: string } | undefined;
  readonly metadata?: Readonly<Record<string, string>> | undefined;
  /** `state` is the server's word: `Running`, `Paused`, `Creating`, ... */
  readonly status: { readonly state: string };
  readonly createdAt: Date;
  /** `null` for a sandbox without a lifetime (explicit cleanup). */
  readonly expiresAt: Date | null;
}

/** `SandboxFilter` of the SDK: metadata pairs must all match; pages are 1-based. */
export interface OpenSandboxListFilter {
  states?: string[];
  metadata?: Record<string, string>;
  page?: number;
  pageSize?: number;
}

/** `ListSandboxesResponse` of the SDK. */
export interface OpenSandboxListPage {
  readonly items: readonly OpenSandboxSandboxInfo[];
  readonly pagination?:
    | { readonly page: number; readonly totalPages: number; readonly hasNextPage: boolean }
    | undefined;
}

/** A `SandboxManager` of the SDK: the lifecycle API without a sandbox in hand. */
export interface OpenSandboxManager {
  listSandboxInfos(filter?: OpenSandboxListFilter): Promise<OpenSandboxListPage>;
  /** Closes the manager's own transport. */
  close(): Promise<void>;
}

export interface OpenSandboxManagerStatic {
  create(options: { connectionConfig: OpenSandboxConnectionConfig }): OpenSandboxManager;
}

/** The SDK module as this package uses it. */
export interface OpenSandboxSdk {
  readonly Sandbox: OpenSandboxSandboxStatic;
  readonly ConnectionConfig: new (
    options: OpenSandboxConnectionOptions,
  ) => OpenSandboxConnectionConfig;
  /** Used only to list sandboxes (`sbx ls`); optional so an SDK stand-in without it still acquires. */
  readonly SandboxManager?: OpenSandboxManagerStatic;
}

function isSdk(value: unknown): value is OpenSandboxSdk {
  if (typeof value !== 'object' || value === null) return false;
  const mod = value as { Sandbox?: { create?: unknown }; ConnectionConfig?: unknown };
  return typeof mod.Sandbox?.create === 'function' && typeof mod.ConnectionConfig === 'function';
}

/**
 * Imports the real SDK. A missing package raises `MissingDependencyError` naming it and how to
 * install it; a package that lacks the expected exports raises `SandboxRuntimeError`.
 */
export async function loadOpenSandboxSdk(importer?: ModuleImporter): Promise<OpenSandboxSdk> {
  const mod = await loadOptionalDependency<unknown>(
    OPENSANDBOX_SDK_PACKAGE,
    OPENSANDBOX_PROVIDER_PACKAGE,
    importer,
  );
  if (isSdk(mod)) return mod;
  // CommonJS builds arrive as { default: module.exports }.
  const fallback = (mod as { default?: unknown } | null)?.default;
  if (isSdk(fallback)) return fallback;
  throw new SandboxRuntimeError(
    `${OPENSANDBOX_SDK_PACKAGE} does not export Sandbox.create and ConnectionConfig; install a version >= 0.1.11`,
  );
}

/**
 * Loads the SDK on the first call and hands out that load after: `source` is the SDK itself, a
 * function loading it, or (undefined) the vendor package through `importer`. A failed load is not
 * kept: installing the SDK later in a long-lived process works.
 */
export function sdkLoader(
  source: OpenSandboxSdk | (() => Promise<OpenSandboxSdk>) | undefined,
  importer?: ModuleImporter,
): () => Promise<OpenSandboxSdk> {
  let loaded: Promise<OpenSandboxSdk> | undefined;
  return () => {
    if (loaded === undefined) {
      const attempt =
        source === undefined
          ? loadOpenSandboxSdk(importer)
          : typeof source === 'function'
            ? source()
            : Promise.resolve(source);
      loaded = attempt;
      attempt.catch(() => {
        if (loaded === attempt) loaded = undefined;
      });
    }
    return loaded;
  };
}
