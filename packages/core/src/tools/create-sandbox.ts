import type { Sandbox } from '../contract/sandbox.js';
import type { AgentSkillPolicy, SandboxProvider } from '../contract/sandbox-provider.js';
import type { SandboxSpec } from '../contract/sandbox-spec.js';
import { SandboxRuntimeError } from '../errors/errors.js';
import { assertValidThreadIdentity } from '../identity/thread-id-rules.js';
import type { Logger } from '../logging/logger.js';
import type { SandboxProcesses } from '../contract/sandbox-processes.js';
import { createToolContext } from './create-tool-context.js';
import { ensureSandboxInitialized } from './ensure-sandbox.js';

/**
 * The key `await using` disposes by. Node 20 defines `Symbol.asyncDispose` itself (as
 * `Symbol.for('nodejs.asyncDispose')`, since 20.4; V8 has it only from Node 24), and TypeScript's
 * and esbuild's `await using` read `Symbol.asyncDispose` at run time: the fallback keeps the
 * handle disposable on a runtime that lacks it, by the key Node would give it.
 */
export const ASYNC_DISPOSE: typeof Symbol.asyncDispose =
  Symbol.asyncDispose ?? (Symbol.for('nodejs.asyncDispose') as typeof Symbol.asyncDispose);

export interface CreateSandboxOptions {
  provider: SandboxProvider;
  /** Default: the provider's default user. */
  userId?: string | undefined;
  /** The thread whose sandbox this is: the same thread gets the same sandbox back. */
  threadId: string;
  /** What the sandbox must be (image, resources, timeout, labels); see `SandboxSpec`. */
  spec?: SandboxSpec | undefined;
  /** A lead agent's explicit skill policy, as `ToolContext.skillPolicy`. */
  skillPolicy?: AgentSkillPolicy | undefined;
  /** Cancels the acquisition. */
  signal?: AbortSignal | undefined;
  logger?: Logger | undefined;
}

/**
 * The thread's `Sandbox`, held until released: `await using` releases it at the end of the scope,
 * `release()` does it by hand. Releasing twice releases once; after it, every method of the
 * handle (and of its `processes`) rejects with `SandboxRuntimeError`, since the provider may have
 * parked or stopped what it stands for.
 */
export type DisposableSandbox = Sandbox &
  AsyncDisposable & {
    /** Releases the sandbox to its provider (`provider.release(id)`); once, however often called. */
    release(): Promise<void>;
    /** True once `release()` (or the disposal) was called. */
    readonly released: boolean;
  };

function releasedError(id: string): SandboxRuntimeError {
  return new SandboxRuntimeError(
    `Sandbox ${id} was released by this handle; call createSandbox again to use it`,
  );
}

/** A `processes` whose every call rejects: what a released handle answers. */
function releasedProcesses(id: string): SandboxProcesses {
  const refuse = () => Promise.reject(releasedError(id));
  return { start: refuse, list: refuse, get: refuse };
}

/**
 * One line from a provider to a sandbox:
 *
 * ```ts
 * await using sandbox = await createSandbox({ provider, userId: 'alice', threadId: 'thread-1' });
 * const { stdout } = await sandbox.exec('uname -a');
 * ```
 *
 * The ids pass the one id rule (`assertValidThreadIdentity`) before the provider is asked; the
 * sandbox is acquired the way the agent tools acquire theirs (`ensureSandboxInitialized`: a
 * sandbox that vanishes at once is released again, a skill policy's view is checked). The
 * provider stays the caller's: shut it down when done.
 *
 * @throws InvalidArgumentError for a user or thread id outside the id rule
 */
export async function createSandbox(options: CreateSandboxOptions): Promise<DisposableSandbox> {
  const { provider, userId, threadId } = options;
  assertValidThreadIdentity({ userId, threadId });
  const context = createToolContext({
    provider,
    threadId,
    ...(userId !== undefined ? { userId } : {}),
    ...(options.spec ? { sandboxSpec: options.spec } : {}),
    ...(options.skillPolicy ? { skillPolicy: options.skillPolicy } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
  });
  const sandbox = await ensureSandboxInitialized(context);
  return disposableSandbox(provider, sandbox);
}

/**
 * `sandbox` as a handle that releases it. A proxy, not a copy or a subclass: provider-specific
 * members (a host sandbox's tool environment) stay reachable, and methods run on the sandbox
 * itself, whose private fields a proxy receiver could not reach.
 */
function disposableSandbox(provider: SandboxProvider, sandbox: Sandbox): DisposableSandbox {
  let releasing: Promise<void> | undefined;
  const release = (): Promise<void> => (releasing ??= provider.release(sandbox.id));
  const bound = new Map<PropertyKey, unknown>();
  const handle = new Proxy(sandbox, {
    get(target, property) {
      if (property === 'release') return release;
      if (property === ASYNC_DISPOSE) return release;
      if (property === 'released') return releasing !== undefined;
      if (releasing !== undefined && property === 'processes') return releasedProcesses(target.id);
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      if (releasing !== undefined) return () => Promise.reject(releasedError(target.id));
      // One bound function per method, so `handle.exec === handle.exec` holds.
      let fn = bound.get(property);
      if (fn === undefined) {
        fn = (value as (...args: unknown[]) => unknown).bind(target);
        bound.set(property, fn);
      }
      return fn;
    },
    set(target, property, value) {
      return Reflect.set(target, property, value, target);
    },
    has(target, property) {
      return (
        property === 'release' ||
        property === 'released' ||
        property === ASYNC_DISPOSE ||
        Reflect.has(target, property)
      );
    },
  });
  return handle as DisposableSandbox;
}
