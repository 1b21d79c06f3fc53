import { isSbxError } from '../errors/errors.js';
import type { Logger } from '../logging/logger.js';
import type { AcquirePath } from '../contract/provider-events.js';
import type {
  ModuleImporter,
  OtelApi,
  TelemetryAttributes,
  TelemetryCounter,
  TelemetryHistogram,
  TelemetryMeter,
  TelemetryObservableCallback,
  TelemetryObservableGauge,
  TelemetryTracer,
} from './observability-otel.js';

/** Span names. Sandbox operations are `sbx.<operation>` with the operation names below. */
export const SPAN_NAMES = {
  acquire: 'sbx.acquire',
  release: 'sbx.release',
  /** `shutdown()` and `reset()`; the attribute `sbx.teardown.kind` says which. */
  teardown: 'sbx.teardown',
  execute: 'sbx.execute',
  releaseScope: 'sbx.release_scope',
  readFile: 'sbx.read_file',
  downloadFile: 'sbx.download_file',
  writeFile: 'sbx.write_file',
  updateFile: 'sbx.update_file',
  listDir: 'sbx.list_dir',
  glob: 'sbx.glob',
  grep: 'sbx.grep',
} as const;

export const METRIC_NAMES = {
  /** Histogram, seconds; attributes `path` (acquire path or `unknown`) and `outcome`. */
  acquireDuration: 'sbx.acquire.duration',
  /** Histogram, seconds; attributes `operation` (e.g. `execute`, `read_file`) and `outcome`. */
  operationDuration: 'sbx.sandbox.operation.duration',
  /** Observable gauge; only for providers with `sandboxCounts()`. */
  activeSandboxes: 'sbx.sandboxes.active',
  /** Observable gauge; only for providers with `sandboxCounts()`. */
  warmSandboxes: 'sbx.sandboxes.warm',
  /** Counter; attribute `operation`. */
  ownershipErrors: 'sbx.ownership.errors',
  /** Counter. */
  adoptions: 'sbx.reconcile.adoptions',
  /** Counter; attribute `reason`. */
  reaps: 'sbx.reconcile.reaps',
} as const;

/** The `path` attribute when the provider did not report how an acquire was served. */
export const UNKNOWN_ACQUIRE_PATH = 'unknown';

export interface InstrumentProviderOptions {
  /** Default: the global tracer of `@opentelemetry/api` (scope `@sbx/core`), if installed. */
  tracer?: TelemetryTracer;
  /**
   * Default: the global meter of `@opentelemetry/api`, if installed. The API hands out a no-op
   * meter when no global MeterProvider is registered yet, so register it before instrumenting.
   */
  meter?: TelemetryMeter;
  /** Default silent. Debug lines per acquire; warnings when telemetry itself misbehaves. */
  logger?: Logger;
  /** Monotonic milliseconds for durations. Default `performance.now`. */
  now?: () => number;
  /** Loads `@opentelemetry/api`; tests replace it. Default a native dynamic import. */
  importer?: ModuleImporter;
}

export type Outcome = 'success' | 'error';
export type AttributeInput = string | number | boolean | undefined;

export interface Telemetry {
  readonly api: OtelApi | undefined;
  readonly tracer: TelemetryTracer | undefined;
  readonly acquireDuration: TelemetryHistogram | undefined;
  readonly operationDuration: TelemetryHistogram | undefined;
  readonly ownershipErrors: TelemetryCounter | undefined;
  readonly adoptions: TelemetryCounter | undefined;
  readonly reaps: TelemetryCounter | undefined;
  readonly gauges: readonly [TelemetryObservableGauge, TelemetryObservableCallback][];
}

export const NO_TELEMETRY: Telemetry = {
  api: undefined,
  tracer: undefined,
  acquireDuration: undefined,
  operationDuration: undefined,
  ownershipErrors: undefined,
  adoptions: undefined,
  reaps: undefined,
  gauges: [],
};

/** Per acquire call: the paths its provider reported, by sandbox id (the last report wins). */
export interface AcquireRecord {
  readonly paths: Map<string, AcquirePath>;
}

// Acquire events reported outside any instrumented acquire call, kept for a later call that
// resolves to the same id. Bounded: a provider that reports without ever being asked must not grow
// this without limit.
export const MAX_UNCLAIMED_PATHS = 1024;

export type AnyMethod = (...args: never[]) => unknown;

// Objects already instrumented, by any instrumentation: instrumenting twice would record every
// call twice.
export const instrumentedProviders = new WeakSet<object>();

/**
 * Replaces methods of `target` with own properties that wrap the current ones, on the object
 * itself. In place, not through a proxy, because identity matters: lease managers are registered
 * per provider object, and a provider compares the sandboxes it hands out with its own maps. The
 * originals are called with `this` = the target, so `#private` state keeps working.
 */
export function patchMethods<T extends object>(
  target: T,
  wrap: (name: string, original: AnyMethod) => AnyMethod,
  names: readonly string[],
): void {
  const record = target as unknown as Record<string, unknown>;
  for (const name of names) {
    const original = record[name];
    if (typeof original !== 'function') continue;
    Object.defineProperty(target, name, {
      value: wrap(name, original as AnyMethod),
      writable: true,
      configurable: true,
      enumerable: false,
    });
  }
}

export function errorCode(err: unknown): string | undefined {
  return isSbxError(err) ? err.code : undefined;
}

export function attributesOf(entries: Record<string, string | number | boolean | undefined>) {
  const out: TelemetryAttributes = {};
  for (const [key, value] of Object.entries(entries)) if (value !== undefined) out[key] = value;
  return out;
}
