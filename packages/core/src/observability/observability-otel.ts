import { MissingDependencyError, isSbxError } from '../errors/errors.js';
import { loadOptionalDependency } from '../modules/optional-dependency.js';

/**
 * The parts of `@opentelemetry/api` that sbx uses, stated structurally. `@opentelemetry/api` is an
 * optional peer of `@sbx/core`, so the published types cannot import it (a consumer without it would
 * fail to type-check); a real `Tracer` / `Meter` from any 1.x API satisfies these interfaces.
 */
export type TelemetryAttributeValue = string | number | boolean;
export type TelemetryAttributes = Record<string, TelemetryAttributeValue | undefined>;

export interface TelemetrySpan {
  setAttribute(key: string, value: TelemetryAttributeValue): unknown;
  /** `code` as in the API's `SpanStatusCode`: 0 unset, 1 ok, 2 error. */
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: Error | string): void;
  end(): void;
}

export interface TelemetryTracer {
  startSpan(name: string, options?: { attributes?: TelemetryAttributes }): TelemetrySpan;
}

export interface TelemetryHistogram {
  record(value: number, attributes?: TelemetryAttributes): void;
}

export interface TelemetryCounter {
  add(value: number, attributes?: TelemetryAttributes): void;
}

export interface TelemetryObservableResult {
  observe(value: number, attributes?: TelemetryAttributes): void;
}

export type TelemetryObservableCallback = (result: TelemetryObservableResult) => void;

export interface TelemetryObservableGauge {
  addCallback(callback: TelemetryObservableCallback): void;
  removeCallback(callback: TelemetryObservableCallback): void;
}

export interface TelemetryMetricOptions {
  description?: string;
  unit?: string;
}

export interface TelemetryMeter {
  createHistogram(name: string, options?: TelemetryMetricOptions): TelemetryHistogram;
  createCounter(name: string, options?: TelemetryMetricOptions): TelemetryCounter;
  createObservableGauge(name: string, options?: TelemetryMetricOptions): TelemetryObservableGauge;
}

/** What sbx reads from the `@opentelemetry/api` module itself. */
export interface OtelApi {
  trace: {
    getTracer(name: string, version?: string): TelemetryTracer;
    setSpan(context: unknown, span: TelemetrySpan): unknown;
  };
  metrics: { getMeter(name: string, version?: string): TelemetryMeter };
  context: {
    active(): unknown;
    with<R>(context: unknown, fn: () => R): R;
  };
}

/** Instrumentation scope name of the tracer and meter sbx takes from the global providers. */
export const TELEMETRY_SCOPE = '@sbx/core';

export const OTEL_API_PACKAGE = '@opentelemetry/api';

export const SPAN_STATUS_ERROR = 2;

export type ModuleImporter = (specifier: string) => Promise<unknown>;

/**
 * The `@opentelemetry/api` module, or undefined when it is not installed (observability is then a
 * no-op). Any other failure to load it (a broken install) propagates.
 */
export async function loadOtelApi(importer?: ModuleImporter): Promise<OtelApi | undefined> {
  try {
    const mod = await loadOptionalDependency<OtelApi & { default?: OtelApi }>(
      OTEL_API_PACKAGE,
      '@sbx/core instrumentProvider',
      importer,
    );
    // Through CommonJS interop the namespace may only carry `default`.
    return mod.trace ? mod : mod.default;
  } catch (err) {
    if (isSbxError(err) && err.code === MissingDependencyError.CODE) return undefined;
    throw err;
  }
}
