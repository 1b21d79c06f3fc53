import type { Logger } from '../logging/logger.js';
import { hasSandboxCounts } from '../contract/provider-events.js';
import type { SandboxProvider } from '../contract/sandbox-provider.js';
import type {
  OtelApi,
  TelemetryObservableCallback,
  TelemetryObservableGauge,
} from './observability-otel.js';
import { loadOtelApi, TELEMETRY_SCOPE } from './observability-otel.js';
import { METRIC_NAMES } from './instrumentation-support.js';
import type { InstrumentProviderOptions, Telemetry } from './instrumentation-support.js';

/**
 * The telemetry an instrumented provider records into, made once: the tracer and meter (the ones
 * given, else those of the installed `@opentelemetry/api`, else none), the acquire and operation
 * histograms, the ownership, adoption and reap counters, and the active/warm gauges of a provider
 * that counts its sandboxes. A missing or broken `@opentelemetry/api` is logged, never thrown:
 * telemetry must not fail sandbox calls.
 */
export async function createTelemetry(
  options: InstrumentProviderOptions,
  context: {
    readonly target: SandboxProvider;
    readonly logger: Logger;
    /** True once the provider was torn down: its gauges then observe nothing. */
    readonly detached: () => boolean;
  },
): Promise<Telemetry> {
  const { logger } = context;
  let api: OtelApi | undefined;
  try {
    api = await loadOtelApi(options.importer);
  } catch (err) {
    // A broken install must not fail sandbox calls; the explicit tracer/meter still work.
    logger.warn('@opentelemetry/api could not be loaded; using only the given tracer/meter', {
      error: err,
    });
  }
  if (!api) logger.debug('@opentelemetry/api is not installed; global telemetry is off');
  const tracer = options.tracer ?? api?.trace.getTracer(TELEMETRY_SCOPE);
  const meter = options.meter ?? api?.metrics.getMeter(TELEMETRY_SCOPE);
  const gauges: [TelemetryObservableGauge, TelemetryObservableCallback][] = [];
  const target = context.target;
  if (meter && hasSandboxCounts(target)) {
    const observe = (key: 'active' | 'warm') => (result: { observe(value: number): void }) => {
      if (context.detached()) return;
      try {
        result.observe(target.sandboxCounts()[key]);
      } catch (err) {
        logger.warn('sandboxCounts() failed; gauge skipped', { gauge: key, error: err });
      }
    };
    for (const [name, key, description] of [
      [METRIC_NAMES.activeSandboxes, 'active', 'Sandboxes acquired and not released'],
      [METRIC_NAMES.warmSandboxes, 'warm', 'Released sandboxes parked for reuse'],
    ] as const) {
      const gauge = meter.createObservableGauge(name, { description, unit: '{sandbox}' });
      const callback = observe(key);
      gauge.addCallback(callback);
      gauges.push([gauge, callback]);
    }
  }
  return {
    api,
    tracer,
    acquireDuration: meter?.createHistogram(METRIC_NAMES.acquireDuration, {
      description: 'Time to acquire a sandbox, by acquire path',
      unit: 's',
    }),
    operationDuration: meter?.createHistogram(METRIC_NAMES.operationDuration, {
      description: 'Time of one sandbox operation (command, file or search call)',
      unit: 's',
    }),
    ownershipErrors: meter?.createCounter(METRIC_NAMES.ownershipErrors, {
      description: 'Ownership store calls that could not be answered',
    }),
    adoptions: meter?.createCounter(METRIC_NAMES.adoptions, {
      description: 'Orphaned sandboxes adopted by reconciliation',
    }),
    reaps: meter?.createCounter(METRIC_NAMES.reaps, {
      description: 'Orphaned or duplicate sandboxes destroyed by reconciliation',
    }),
    gauges,
  };
}
