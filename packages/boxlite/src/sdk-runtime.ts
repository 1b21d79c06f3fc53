import { loadOptionalDependency } from '@sbx/core';
import { interopDefault } from '@sbx/core/internal';
import type { Logger, ModuleImporter } from '@sbx/core';
import type {
  BoxliteBoxHandle,
  BoxliteBoxSpec,
  BoxliteBoxSummary,
  BoxliteExecOptions,
  BoxliteExecResult,
  BoxliteExecution,
  BoxliteRuntime,
  BoxliteStartOptions,
} from './boxlite-runtime.js';
import type { FsAccessProbe } from './virtualization.js';
import { assertVirtualizationAvailable } from './virtualization.js';

/** npm name of the BoxLite SDK (an optional peer dependency of this package). */
export const BOXLITE_SDK_PACKAGE = '@boxlite-ai/boxlite';

/*
 * The parts of `@boxlite-ai/boxlite@0.10` used here, restated structurally so this package's
 * declarations do not depend on the SDK being installed. `sdk-runtime.types.test.ts` checks them
 * against the SDK's own declarations.
 */

export interface SdkExecStream {
  next(): Promise<string | null>;
}

export interface SdkExecStdin {
  write(data: Buffer): Promise<void>;
  close(): Promise<void>;
}

export interface SdkExecution {
  stdin(): Promise<SdkExecStdin>;
  stdout(): Promise<SdkExecStream>;
  stderr(): Promise<SdkExecStream>;
  wait(): Promise<{ exitCode: number; errorMessage?: string }>;
  kill(): Promise<void>;
  signal(signal: number): Promise<void>;
}

export interface SdkBox {
  readonly id: string;
  readonly name: string | null;
  exec(
    command: string,
    args?: string[] | null,
    env?: Array<[string, string]> | null,
    tty?: boolean | null,
    user?: string | null,
    timeoutSecs?: number | null,
    workingDir?: string | null,
  ): Promise<SdkExecution>;
  stop(): Promise<void>;
}

export interface SdkBoxOptions {
  image?: string;
  rootfsPath?: string;
  cpus?: number;
  memoryMib?: number;
  diskSizeGb?: number;
  autoRemove?: boolean;
  detach?: boolean;
}

export interface SdkBoxInfo {
  id: string;
  name?: string;
  state: { status: string; running: boolean };
  createdAt: string;
  startedAt?: string;
}

export interface SdkRuntime {
  create(options: SdkBoxOptions, name?: string | null): Promise<SdkBox>;
  listInfo(): Promise<SdkBoxInfo[]>;
  get(idOrName: string): Promise<SdkBox | null>;
  close(): void;
}

export interface SdkModule {
  JsBoxlite: {
    new (options: { homeDir?: string }): SdkRuntime;
    withDefaultConfig(): SdkRuntime;
  };
}

export interface SdkBoxliteRuntimeOptions {
  /** BoxLite home (image cache and box state); the SDK default when absent. */
  homeDir?: string | undefined;
  /** Loads the SDK; default a dynamic `import()`. */
  importer?: ModuleImporter;
  /** Probe for `/dev/kvm`; default `fs.promises.access`. */
  fsAccess?: FsAccessProbe;
  platform?: NodeJS.Platform;
  logger?: Logger;
}

/** A runtime timestamp as ISO 8601; `undefined` when absent or unreadable (it is only shown). */
function isoTime(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

/** Reads one output stream to its end, chunk by chunk as the VM sends it. */
async function pump(open: () => Promise<SdkExecStream>, sink: (text: string) => void) {
  let stream: SdkExecStream;
  try {
    stream = await open();
  } catch {
    // The SDK reports "no stream" for commands that never write to it.
    return;
  }
  for (let chunk = await stream.next(); chunk !== null; chunk = await stream.next()) sink(chunk);
}

class SdkBoxHandle implements BoxliteBoxHandle {
  readonly name: string;
  readonly #box: SdkBox;
  readonly #logger: Logger | undefined;

  constructor(box: SdkBox, name: string, logger: Logger | undefined) {
    this.#box = box;
    this.name = name;
    this.#logger = logger;
  }

  /** `start`, read to its end: the port's one-shot exec (the provider's own file and probe commands). */
  async exec(
    command: string,
    args: readonly string[],
    env: Readonly<Record<string, string>> | undefined,
    options: BoxliteExecOptions = {},
  ): Promise<BoxliteExecResult> {
    const stdout: string[] = [];
    const stderr: string[] = [];
    const execution = await this.start(command, args, env, {
      ...(options.timeoutSecs !== undefined ? { timeoutSecs: options.timeoutSecs } : {}),
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
      onStdout: (text) => stdout.push(text),
      onStderr: (text) => stderr.push(text),
    });
    const onAbort = (): void => {
      execution.kill().catch((error: unknown) => {
        this.#logger?.debug('Killing an abandoned BoxLite execution failed', {
          box: this.name,
          error,
        });
      });
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const end = await execution.ended;
      const err = stderr.join('');
      const extra = end.errorMessage && !err.includes(end.errorMessage);
      return {
        exitCode: end.exitCode,
        stdout: stdout.join(''),
        stderr: extra ? `${err}${err && !err.endsWith('\n') ? '\n' : ''}${end.errorMessage}` : err,
      };
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  async start(
    command: string,
    args: readonly string[],
    env: Readonly<Record<string, string>> | undefined,
    options: BoxliteStartOptions,
  ): Promise<BoxliteExecution> {
    const execution = await this.#box.exec(
      command,
      [...args],
      env ? Object.entries(env) : null,
      false,
      null,
      options.timeoutSecs ?? null,
      options.cwd ?? null,
    );
    // Both streams at once: a command filling one pipe while the other is not read would stall.
    const ended = Promise.all([
      pump(() => execution.stdout(), options.onStdout),
      pump(() => execution.stderr(), options.onStderr),
    ]).then(() => execution.wait());
    ended.catch(() => {});
    let stdin: Promise<SdkExecStdin> | undefined;
    const input = () => (stdin ??= execution.stdin());
    return {
      ended,
      write: async (data) => {
        await (
          await input()
        ).write(typeof data === 'string' ? Buffer.from(data) : Buffer.from(data));
      },
      closeStdin: async () => (await input()).close(),
      kill: () => execution.kill(),
      signal: (signal) => execution.signal(signal),
    };
  }

  stop(): Promise<void> {
    return this.#box.stop();
  }
}

class SdkBoxliteRuntime implements BoxliteRuntime {
  readonly #runtime: SdkRuntime;
  readonly #logger: Logger | undefined;
  #closed = false;

  constructor(runtime: SdkRuntime, logger: Logger | undefined) {
    this.#runtime = runtime;
    this.#logger = logger;
  }

  async create(spec: BoxliteBoxSpec): Promise<BoxliteBoxHandle> {
    const options: SdkBoxOptions = { autoRemove: true, detach: false };
    if (spec.rootfsPath !== undefined) options.rootfsPath = spec.rootfsPath;
    else if (spec.image !== undefined) options.image = spec.image;
    if (spec.memoryMib !== undefined) options.memoryMib = spec.memoryMib;
    if (spec.cpus !== undefined) options.cpus = spec.cpus;
    if (spec.diskSizeGb !== undefined) options.diskSizeGb = spec.diskSizeGb;
    const box = await this.#runtime.create(options, spec.name);
    return new SdkBoxHandle(box, spec.name, this.#logger);
  }

  async list(): Promise<BoxliteBoxSummary[]> {
    const infos = await this.#runtime.listInfo();
    return infos.map((info) => ({
      id: info.id,
      name: info.name,
      running: info.state.running,
      status: info.state.status,
      createdAt: isoTime(info.createdAt),
      startedAt: isoTime(info.startedAt),
    }));
  }

  async get(name: string): Promise<BoxliteBoxHandle | undefined> {
    const box = await this.#runtime.get(name);
    return box === null ? undefined : new SdkBoxHandle(box, name, this.#logger);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#runtime.close();
  }
}

/**
 * A `BoxliteRuntime` over the real SDK: checks that the host can run micro-VMs, imports
 * `@boxlite-ai/boxlite` (a `MissingDependencyError` naming it when it is not installed) and opens a
 * local runtime.
 *
 * @throws VirtualizationUnavailableError on a host without usable KVM
 * @throws MissingDependencyError when the SDK is not installed
 */
export async function createSdkBoxliteRuntime(
  options: SdkBoxliteRuntimeOptions = {},
): Promise<BoxliteRuntime> {
  await assertVirtualizationAvailable({
    ...(options.fsAccess ? { probe: options.fsAccess } : {}),
    ...(options.platform ? { platform: options.platform } : {}),
  });
  const mod = interopDefault<SdkModule>(
    await loadOptionalDependency<unknown>(
      BOXLITE_SDK_PACKAGE,
      '@sbx/boxlite BoxliteProvider',
      options.importer,
    ),
  );
  const runtime =
    options.homeDir === undefined
      ? mod.JsBoxlite.withDefaultConfig()
      : new mod.JsBoxlite({ homeDir: options.homeDir });
  return new SdkBoxliteRuntime(runtime, options.logger);
}
