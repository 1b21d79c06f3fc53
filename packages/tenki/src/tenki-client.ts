import { SandboxRuntimeError, loadOptionalDependency } from '@sbx/core';
import { interopDefault } from '@sbx/core/internal';
import type { ModuleImporter } from '@sbx/core';

/*
 * The Tenki client port. sbx defines the interface it needs (modelled on Tenki's SDKs) and takes
 * an implementation by injection: a `TenkiClient` object, or the name of a module exporting a
 * factory (`createTenkiClient`, or a default export) that builds one. Errors raised by an implementation should carry the Python SDK's class names as
 * `name` (`SessionTerminatedError`, `FileNotFoundError`, ...), or Node's errno `code`s, which is
 * how the adapter classifies them (see `tenki-errors.ts`).
 */

export interface TenkiCreateOptions {
  /** `<name_prefix><sandbox id>`. */
  readonly name: string;
  /** `null` lets the service infer the workspace from the API key. */
  readonly workspaceId: string | null;
  readonly sticky: boolean;
  /** Always false: sbx waits for readiness itself, so it can terminate a VM that never gets ready. */
  readonly wait: false;
  /** Omitted to use the account default. */
  readonly maxDurationSeconds?: number;
  readonly image?: string;
  readonly cpuCores?: number;
  readonly memoryMb?: number;
  /** Omitted when empty. */
  readonly env?: Readonly<Record<string, string>>;
}

export interface TenkiExecOptions {
  readonly env?: Readonly<Record<string, string>>;
  /** Enforced by the service inside the VM. */
  readonly timeoutSeconds?: number;
  readonly cwd?: string;
  /** Fires when sbx stopped waiting (deadline or abort); implementations should cancel the call. */
  readonly signal?: AbortSignal;
}

export interface TenkiExecResult {
  /** `null` when the service reports none (e.g. the command was killed). */
  readonly exitCode: number | null;
  readonly stdout: Uint8Array;
  readonly stderr: Uint8Array;
}

export interface TenkiStat {
  readonly path: string;
  readonly size: number;
  readonly isDir: boolean;
}

/** Native file API of a sandbox: binary-safe and streaming, no shell involved. */
export interface TenkiFs {
  mkdir(path: string, options?: { recursive?: boolean; mode?: number }): Promise<void>;
  readBytes(path: string): Promise<Uint8Array>;
  /** Errors may surface while iterating. Breaking out of the loop must cancel the transfer. */
  readStream(path: string): AsyncIterable<Uint8Array>;
  writeStream(
    path: string,
    chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    options?: { mode?: number; truncate?: boolean },
  ): Promise<void>;
  stat(path: string): Promise<TenkiStat>;
}

export type TenkiSignal = 'SIGTERM' | 'SIGKILL' | 'SIGINT' | 'SIGHUP';

/**
 * A live command (the SDKs' `start`): its two output streams as they are produced, its input, its
 * end. The streams end when the command has ended; errors may surface while iterating.
 */
export interface TenkiProcess {
  readonly stdout: AsyncIterable<Uint8Array>;
  readonly stderr: AsyncIterable<Uint8Array>;
  writeStdin(data: Uint8Array): Promise<void>;
  closeStdin(): Promise<void>;
  /** Resolves when the command has ended; `exitCode` is `null` when the service reports none. */
  wait(): Promise<{ readonly exitCode: number | null }>;
  /** Signals the command (an implementation that can only kill sends `SIGKILL` for all four). */
  kill(signal: TenkiSignal): Promise<void>;
}

/** One Tenki microVM. */
export interface TenkiRemoteSandbox {
  readonly id: string;
  readonly fs: TenkiFs;
  waitReady(timeoutSeconds?: number): Promise<void>;
  exec(argv: readonly string[], options?: TenkiExecOptions): Promise<TenkiExecResult>;
  /**
   * Optional: starts a live command (the SDKs' `start`). With it the sandbox streams output,
   * takes standard input and runs background processes; without it commands are one-shot.
   */
  start?(
    argv: readonly string[],
    options?: Omit<TenkiExecOptions, 'signal'>,
  ): Promise<TenkiProcess>;
  /** Terminates the microVM. */
  close(): Promise<void>;
}

export interface TenkiClient {
  create(options: TenkiCreateOptions): Promise<TenkiRemoteSandbox>;
  /** Releases client resources (channels); called at provider shutdown when present. */
  close?(): Promise<void>;
}

export interface TenkiClientOptions {
  /** Absent: the implementation's own fallback (the Python SDK reads `TENKI_API_KEY`). */
  readonly apiKey?: string;
  readonly baseUrl?: string;
}

export type TenkiClientFactory = (
  options: TenkiClientOptions,
) => TenkiClient | Promise<TenkiClient>;

/** The export a client module provides (or its default export). */
export const TENKI_CLIENT_FACTORY_EXPORT = 'createTenkiClient';

/**
 * Imports `moduleName` on first use and builds a client with its factory.
 *
 * @throws MissingDependencyError when the module is not installed
 * @throws SandboxRuntimeError when it exports no factory
 */
export async function loadTenkiClient(
  moduleName: string,
  options: TenkiClientOptions,
  importer?: ModuleImporter,
): Promise<TenkiClient> {
  const mod = await loadOptionalDependency<unknown>(
    moduleName,
    '@sbx/tenki TenkiSandboxProvider',
    importer,
  );
  const named =
    typeof mod === 'object' && mod !== null
      ? (mod as Record<string, unknown>)[TENKI_CLIENT_FACTORY_EXPORT]
      : undefined;
  const factory = typeof named === 'function' ? named : interopDefault<unknown>(mod);
  if (typeof factory !== 'function') {
    throw new SandboxRuntimeError(
      `Tenki client module "${moduleName}" must export a "${TENKI_CLIENT_FACTORY_EXPORT}" function or a default factory`,
    );
  }
  return (factory as TenkiClientFactory)(options);
}

/**
 * The client a provider uses: `given` (a client, or a function building it) when there is one,
 * else the factory of `moduleName` built with `options`.
 *
 * @throws SandboxRuntimeError when neither is configured: Tenki has no JavaScript SDK to default to
 */
export async function resolveTenkiClient(
  given: TenkiClient | (() => Promise<TenkiClient>) | undefined,
  moduleName: string | undefined,
  options: { readonly apiKey?: string | undefined; readonly baseUrl?: string | undefined },
  importer?: ModuleImporter,
): Promise<TenkiClient> {
  if (typeof given === 'function') return given();
  if (given !== undefined) return given;
  if (moduleName === undefined) {
    throw new SandboxRuntimeError(
      'No Tenki client: Tenki has no JavaScript SDK, so pass `client` to TenkiSandboxProvider or name a module exporting createTenkiClient in sandbox.tenki.client_module',
    );
  }
  return loadTenkiClient(
    moduleName,
    {
      ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
      ...(options.baseUrl !== undefined ? { baseUrl: options.baseUrl } : {}),
    },
    importer,
  );
}
