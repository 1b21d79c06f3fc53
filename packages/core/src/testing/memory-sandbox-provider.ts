import type { AcquireOptions } from '../contract/sandbox-provider.js';
import { SandboxProvider } from '../contract/sandbox-provider.js';
import { MemorySandbox, type MemorySandboxOptions } from './memory-sandbox.js';
import { DEFAULT_SPEC_POLICY, checkSandboxSpec } from '../contract/sandbox-spec.js';

export interface MemorySandboxProviderOptions {
  /**
   * Prefix of the ids (`<prefix>:<user>:<thread>`; `<prefix>` alone for an anonymous acquire).
   * Default `memory`. With `local` the tool layer treats the sandboxes as host-backed.
   */
  idPrefix?: string;
  /** Options of every sandbox this provider creates. */
  sandboxOptions?: MemorySandboxOptions | ((sandboxId: string) => MemorySandboxOptions);
  /** Default false: `release` only records. True: it parks (`get` misses until re-acquired). */
  releaseParks?: boolean;
}

/**
 * A provider of `MemorySandbox`es with deterministic ids per user and thread, recording its
 * lifecycle calls. Re-acquiring an id returns the same sandbox object with its files intact.
 */
export class MemorySandboxProvider extends SandboxProvider {
  readonly sandboxes = new Map<string, MemorySandbox>();
  readonly acquireCalls: AcquireOptions[] = [];
  readonly releaseCalls: string[] = [];
  readonly #active = new Set<string>();
  readonly #options: MemorySandboxProviderOptions;

  constructor(options: MemorySandboxProviderOptions = {}) {
    super();
    this.#options = options;
  }

  /** The id `acquire` returns for this user and thread. */
  idFor(options: { userId?: string | undefined; threadId?: string | undefined }): string {
    const prefix = this.#options.idPrefix ?? 'memory';
    return options.threadId === undefined
      ? prefix
      : `${prefix}:${options.userId ?? 'default'}:${options.threadId}`;
  }

  async acquire(options: AcquireOptions = {}): Promise<string> {
    this.acquireCalls.push(options);
    // Honours no spec, and refuses one like every provider (see `SandboxProvider.admit`).
    checkSandboxSpec(options.spec, this.specSupport, DEFAULT_SPEC_POLICY, 'MemorySandboxProvider');
    const id = this.idFor(options);
    if (!this.sandboxes.has(id)) {
      const sandboxOptions = this.#options.sandboxOptions;
      this.sandboxes.set(
        id,
        new MemorySandbox(
          id,
          typeof sandboxOptions === 'function' ? sandboxOptions(id) : sandboxOptions,
        ),
      );
    }
    this.#active.add(id);
    return id;
  }

  get(sandboxId: string): MemorySandbox | undefined {
    return this.#active.has(sandboxId) ? this.sandboxes.get(sandboxId) : undefined;
  }

  async release(sandboxId: string): Promise<void> {
    this.releaseCalls.push(sandboxId);
    if (this.#options.releaseParks) this.#active.delete(sandboxId);
  }

  /** Makes `get` miss for this id, as if the sandbox vanished behind the provider's back. */
  kill(sandboxId: string): void {
    this.#active.delete(sandboxId);
  }
}
