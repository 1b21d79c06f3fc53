import { AsyncLocalStorage } from 'node:async_hooks';
import { InvalidArgumentError, OwnershipBackendError } from '../errors/errors.js';
import type { Logger } from '../logging/logger.js';
import { silentLogger } from '../logging/logger.js';
import type { AcquirePath, SandboxProviderEvent } from '../contract/provider-events.js';
import { hasProviderEvents } from '../contract/provider-events.js';
import type { TelemetryAttributes, TelemetrySpan } from './observability-otel.js';
import { SPAN_STATUS_ERROR } from './observability-otel.js';
import { createTelemetry } from './telemetry-instruments.js';
import type {
  ExecuteCommandOptions,
  Sandbox,
  ScopedExecuteCommandOptions,
  WriteFileOptions,
} from '../contract/sandbox.js';
import type { AcquireOptions, SandboxProvider } from '../contract/sandbox-provider.js';
import { errorMessage } from '../errors/error-inspection.js';

import {
  MAX_UNCLAIMED_PATHS,
  NO_TELEMETRY,
  SPAN_NAMES,
  UNKNOWN_ACQUIRE_PATH,
  attributesOf,
  errorCode,
  instrumentedProviders,
  patchMethods,
} from './instrumentation-support.js';
import type {
  AcquireRecord,
  AnyMethod,
  AttributeInput,
  InstrumentProviderOptions,
  Outcome,
  Telemetry,
} from './instrumentation-support.js';

export { METRIC_NAMES, SPAN_NAMES, UNKNOWN_ACQUIRE_PATH } from './instrumentation-support.js';
export type { InstrumentProviderOptions } from './instrumentation-support.js';

/**
 * The instrumentation of one provider: its wrapped lifecycle methods and the sandboxes it hands
 * out, recording into the telemetry `createTelemetry` made. Kept whole: the acquire scope, the
 * paths the provider reports, the spans and the teardown all share this state.
 */
class ProviderInstrumentation<P extends SandboxProvider> {
  readonly #target: P;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #ready: Promise<Telemetry>;
  #telemetry: Telemetry | undefined;
  readonly #acquireScope = new AsyncLocalStorage<AcquireRecord>();
  readonly #unclaimedPaths = new Map<string, AcquirePath>();
  readonly #sandboxes = new WeakSet<Sandbox>();
  // The sandbox whose instrumented operation is running: operations it calls on itself (a scoped
  // command delegating to executeCommand, an append reading first) are part of that operation and
  // are not recorded again.
  readonly #sandboxOp = new AsyncLocalStorage<Sandbox>();
  readonly #reportsEvents: boolean;
  #unsubscribe: (() => void) | undefined;
  #detached = false;

  constructor(target: P, options: InstrumentProviderOptions) {
    this.#target = target;
    this.#logger = options.logger ?? silentLogger;
    this.#now = options.now ?? (() => performance.now());
    this.#reportsEvents = hasProviderEvents(target);
    if (hasProviderEvents(target)) {
      this.#unsubscribe = target.onEvent((event) => this.#onProviderEvent(event));
    }
    this.#ready = createTelemetry(options, {
      target,
      logger: this.#logger,
      detached: () => this.#detached,
    }).catch((err: unknown) => {
      // A tracer or meter that throws while creating instruments must not fail sandbox calls.
      this.#logger.warn('telemetry setup failed; sbx calls run uninstrumented', { error: err });
      return NO_TELEMETRY;
    });
    void this.#ready.then((telemetry) => {
      this.#telemetry = telemetry;
    });
    patchMethods(target, (name, original) => this.#providerMethod(name, original), [
      'acquire',
      'release',
      'get',
      'shutdown',
      'reset',
    ]);
  }

  /** The instrumented form of one provider method; `original` runs with `this` = the provider. */
  #providerMethod(name: string, original: AnyMethod): AnyMethod {
    const target = this.#target;
    const call = (...args: unknown[]) =>
      (original as (...a: unknown[]) => unknown).apply(target, args);
    switch (name) {
      case 'acquire':
        return ((options?: AcquireOptions) =>
          this.#acquire(options, () => call(options) as Promise<string>)) as AnyMethod;
      case 'release':
        return ((sandboxId: string) =>
          this.#traced(
            SPAN_NAMES.release,
            { 'sbx.sandbox_id': sandboxId },
            'release',
            () => call(sandboxId) as Promise<void>,
          )) as AnyMethod;
      case 'get':
        return ((sandboxId: string) => {
          const sandbox = call(sandboxId) as Sandbox | undefined;
          if (sandbox) this.#instrumentSandbox(sandbox);
          return sandbox;
        }) as AnyMethod;
      case 'shutdown':
      case 'reset':
        return (() => this.#teardown(name, () => call() as Promise<void>)) as AnyMethod;
      default:
        return original;
    }
  }

  /**
   * Runs `fn` with telemetry. Calls made while telemetry is still resolving wait on `#ready`; calls
   * made later run at once. Call order is kept (commands of one scope must reach the sandbox in
   * issue order) because the reaction that sets `#telemetry` was registered first, in the
   * constructor: when `#ready` settles, it and every waiting call run in one batch, before any
   * later call can see `#telemetry` set.
   */
  #withTelemetry<T>(fn: (telemetry: Telemetry) => Promise<T>): Promise<T> {
    const ready = this.#telemetry;
    return ready ? fn(ready) : this.#ready.then(fn);
  }

  /** Counts and logs outside any call; applied once telemetry is resolved. */
  #record(fn: (telemetry: Telemetry) => void): void {
    if (this.#telemetry) fn(this.#telemetry);
    else void this.#ready.then(fn);
  }

  #onProviderEvent(event: SandboxProviderEvent): void {
    switch (event.type) {
      case 'acquire': {
        const record = this.#acquireScope.getStore();
        if (record) {
          record.paths.set(event.sandboxId, event.path);
        } else {
          this.#unclaimedPaths.delete(event.sandboxId);
          this.#unclaimedPaths.set(event.sandboxId, event.path);
          if (this.#unclaimedPaths.size > MAX_UNCLAIMED_PATHS) {
            const oldest = this.#unclaimedPaths.keys().next();
            if (!oldest.done) this.#unclaimedPaths.delete(oldest.value);
          }
        }
        return;
      }
      case 'adopt':
        this.#logger.debug('reconciliation adopted a sandbox', { sandboxId: event.sandboxId });
        this.#record((t) => t.adoptions?.add(1));
        return;
      case 'reap':
        this.#logger.debug('reconciliation reaped a sandbox', {
          sandboxId: event.sandboxId,
          reason: event.reason,
        });
        this.#record((t) => t.reaps?.add(1, { reason: event.reason }));
        return;
      case 'ownership-error':
        this.#record((t) => t.ownershipErrors?.add(1, { operation: event.operation }));
        return;
    }
  }

  /** Starts a span, runs `fn` as its active context, and ends it however `fn` settles. */
  async #inSpan<T>(
    telemetry: Telemetry,
    name: string,
    attributes: TelemetryAttributes,
    fn: () => Promise<T>,
    onSuccess?: (span: TelemetrySpan | undefined, result: T) => void,
  ): Promise<T> {
    const span = telemetry.tracer?.startSpan(name, { attributes });
    try {
      const { api } = telemetry;
      const result =
        api && span
          ? await api.context.with(api.trace.setSpan(api.context.active(), span), fn)
          : await fn();
      onSuccess?.(span, result);
      return result;
    } catch (err) {
      if (span) {
        span.recordException(err instanceof Error ? err : String(err));
        span.setStatus({
          code: SPAN_STATUS_ERROR,
          message: errorMessage(err),
        });
        const code = errorCode(err);
        if (code) span.setAttribute('sbx.error.code', code);
      }
      throw err;
    } finally {
      span?.end();
    }
  }

  #countOwnershipRejection(telemetry: Telemetry, operation: string, err: unknown): void {
    // A provider that reports events reports its own store failures; counting the rejection too
    // would count one failure twice.
    if (!this.#reportsEvents && errorCode(err) === OwnershipBackendError.CODE) {
      telemetry.ownershipErrors?.add(1, { operation });
    }
  }

  #traced<T>(
    name: string,
    attributes: Record<string, string | number | boolean | undefined>,
    operation: string,
    fn: () => Promise<T>,
  ): Promise<T> {
    return this.#withTelemetry(async (telemetry) => {
      try {
        return await this.#inSpan(telemetry, name, attributesOf(attributes), fn);
      } catch (err) {
        this.#countOwnershipRejection(telemetry, operation, err);
        throw err;
      }
    });
  }

  #acquire(options: AcquireOptions | undefined, run: () => Promise<string>): Promise<string> {
    return this.#withTelemetry(async (telemetry) => {
      const record: AcquireRecord = { paths: new Map() };
      const started = this.#now();
      let path: string = UNKNOWN_ACQUIRE_PATH;
      let outcome: Outcome = 'error';
      try {
        const sandboxId = await this.#inSpan(
          telemetry,
          SPAN_NAMES.acquire,
          attributesOf({ 'sbx.user_id': options?.userId, 'sbx.thread_id': options?.threadId }),
          () => this.#acquireScope.run(record, run),
          (span, id) => {
            const reported = record.paths.get(id) ?? this.#unclaimedPaths.get(id);
            this.#unclaimedPaths.delete(id);
            path = reported ?? UNKNOWN_ACQUIRE_PATH;
            span?.setAttribute('sbx.sandbox_id', id);
            span?.setAttribute('sbx.acquire.path', path);
          },
        );
        outcome = 'success';
        return sandboxId;
      } catch (err) {
        this.#countOwnershipRejection(telemetry, 'acquire', err);
        throw err;
      } finally {
        const seconds = (this.#now() - started) / 1000;
        telemetry.acquireDuration?.record(seconds, { path, outcome });
        this.#logger.debug('sandbox acquire finished', {
          path,
          outcome,
          durationMs: Math.round(seconds * 1000),
        });
      }
    });
  }

  #teardown(kind: 'shutdown' | 'reset', fn: () => Promise<void>): Promise<void> {
    return this.#traced(SPAN_NAMES.teardown, { 'sbx.teardown.kind': kind }, kind, async () => {
      try {
        await fn();
      } finally {
        // After shutdown the provider is gone: stop observing it, so a meter that outlives it
        // neither reads it nor keeps it reachable. A reset provider may be used again.
        if (kind === 'shutdown') this.#detach();
      }
    });
  }

  #detach(): void {
    if (this.#detached) return;
    this.#detached = true;
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    this.#record((t) => {
      for (const [gauge, callback] of t.gauges) gauge.removeCallback(callback);
    });
  }

  /** Instruments a sandbox the provider handed out, once, in place. */
  #instrumentSandbox(sandbox: Sandbox): void {
    if (this.#sandboxes.has(sandbox)) return;
    this.#sandboxes.add(sandbox);
    const op =
      (name: string, attributes: (args: unknown[]) => Record<string, AttributeInput>) =>
      (original: AnyMethod): AnyMethod =>
        ((...args: unknown[]) => {
          const run = () =>
            (original as (...a: unknown[]) => Promise<unknown>).apply(sandbox, args);
          if (this.#sandboxOp.getStore() === sandbox) return run();
          return this.#withTelemetry(async (telemetry) => {
            const started = this.#now();
            let outcome: Outcome = 'error';
            try {
              const result = await this.#inSpan(
                telemetry,
                name,
                attributesOf({ 'sbx.sandbox_id': sandbox.id, ...attributes(args) }),
                () => this.#sandboxOp.run(sandbox, run),
              );
              outcome = 'success';
              return result;
            } finally {
              telemetry.operationDuration?.record((this.#now() - started) / 1000, {
                operation: name.slice('sbx.'.length),
                outcome,
              });
            }
          });
        }) as AnyMethod;
    const path = (args: unknown[]) => ({ 'sbx.file.path': args[0] as string });
    // Command text is never recorded: it may carry secrets inline. Paths are virtual paths.
    const wrappers: Record<string, (original: AnyMethod) => AnyMethod> = {
      exec: op(SPAN_NAMES.execute, (args) => {
        const options = args[1] as ScopedExecuteCommandOptions | undefined;
        return {
          'sbx.command.scope_id': options?.scopeId,
          'sbx.command.timeout_ms': options?.timeoutMs,
        };
      }),
      executeCommand: op(SPAN_NAMES.execute, (args) => ({
        'sbx.command.timeout_ms': (args[1] as ExecuteCommandOptions | undefined)?.timeoutMs,
      })),
      executeCommandInScope: op(SPAN_NAMES.execute, (args) => {
        const options = args[1] as ScopedExecuteCommandOptions | undefined;
        return {
          'sbx.command.scope_id': options?.scopeId,
          'sbx.command.timeout_ms': options?.timeoutMs,
        };
      }),
      releaseCommandScope: op(SPAN_NAMES.releaseScope, (args) => ({
        'sbx.command.scope_id': args[0] as string,
      })),
      readFile: op(SPAN_NAMES.readFile, path),
      downloadFile: op(SPAN_NAMES.downloadFile, path),
      writeFile: op(SPAN_NAMES.writeFile, (args) => ({
        ...path(args),
        'sbx.file.append': (args[2] as WriteFileOptions | undefined)?.append,
      })),
      updateFile: op(SPAN_NAMES.updateFile, path),
      listDir: op(SPAN_NAMES.listDir, path),
      glob: op(SPAN_NAMES.glob, path),
      grep: op(SPAN_NAMES.grep, path),
    };
    try {
      patchMethods(sandbox, (name, original) => wrappers[name]!(original), Object.keys(wrappers));
    } catch (err) {
      // A frozen sandbox object cannot take the wrappers; it keeps working, unobserved.
      this.#logger.warn('sandbox could not be instrumented', { sandboxId: sandbox.id, error: err });
    }
  }
}

/**
 * Instruments a provider in place so its lifecycle and its sandboxes' operations emit OpenTelemetry
 * spans and metrics, and returns it. In place: the provider (and every sandbox it hands out) stays
 * the same object, so lease managers, registries and the provider's own identity checks are
 * unaffected; `instanceof` and provider-specific members keep working. A provider can be
 * instrumented once (a second call throws `InvalidArgumentError`).
 *
 * Spans: `sbx.acquire` (attributes `sbx.user_id`, `sbx.thread_id`, `sbx.sandbox_id`,
 * `sbx.acquire.path`), `sbx.release`, `sbx.teardown` (`sbx.teardown.kind` = `shutdown` | `reset`),
 * and per sandbox call `sbx.execute`, `sbx.read_file`, `sbx.write_file`, ... (`sbx.sandbox_id`,
 * `sbx.file.path`; never command text). A failed call records the exception, sets the span status
 * to error and `sbx.error.code` for an `SbxError`. Spans are children of the caller's active span.
 * Sandboxes are instrumented when `get()` first returns them.
 *
 * Metrics: see `METRIC_NAMES`. The acquire path comes from providers implementing
 * `SandboxProviderEvents`, else it is `unknown`; the active/warm gauges exist for providers
 * implementing `SandboxProviderCounts`.
 *
 * Without `@opentelemetry/api` installed and without an explicit tracer/meter, every hook is a
 * no-op pass-through.
 */
export function instrumentProvider<P extends SandboxProvider>(
  provider: P,
  options: InstrumentProviderOptions = {},
): P {
  if (instrumentedProviders.has(provider)) {
    throw new InvalidArgumentError(
      `${provider.constructor.name} is already instrumented; instrument a provider once`,
    );
  }
  instrumentedProviders.add(provider);
  new ProviderInstrumentation(provider, options);
  return provider;
}
