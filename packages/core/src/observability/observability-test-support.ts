// In-memory OpenTelemetry tracer, meter and context manager for the observability tests, written
// against the interfaces of the real `@opentelemetry/api` (so the compiler checks they are genuine
// implementations, and the API's global registration and context propagation run for real).
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import {
  ROOT_CONTEXT,
  SpanStatusCode,
  TraceFlags,
  trace,
  context as otelContext,
} from '@opentelemetry/api';
import type {
  Attributes,
  AttributeValue,
  BatchObservableCallback,
  Context,
  ContextManager,
  Counter,
  Exception,
  Gauge,
  Histogram,
  Meter,
  MeterProvider,
  MetricAttributes,
  MetricOptions,
  Observable,
  ObservableCallback,
  ObservableCounter,
  ObservableGauge,
  ObservableUpDownCounter,
  Span,
  SpanContext,
  SpanOptions,
  SpanStatus,
  Tracer,
  TracerProvider,
  UpDownCounter,
} from '@opentelemetry/api';

export interface RecordedSpan {
  readonly name: string;
  readonly scope: string;
  readonly spanId: string;
  readonly traceId: string;
  readonly parentSpanId: string | undefined;
  readonly attributes: Attributes;
  status: SpanStatus;
  readonly exceptions: Exception[];
  ended: boolean;
}

class MemorySpan implements Span {
  readonly #record: RecordedSpan;
  readonly #context: SpanContext;

  constructor(record: RecordedSpan) {
    this.#record = record;
    this.#context = {
      traceId: record.traceId,
      spanId: record.spanId,
      traceFlags: TraceFlags.SAMPLED,
    };
  }

  spanContext(): SpanContext {
    return this.#context;
  }
  setAttribute(key: string, value: AttributeValue): this {
    this.#record.attributes[key] = value;
    return this;
  }
  setAttributes(attributes: Attributes): this {
    Object.assign(this.#record.attributes, attributes);
    return this;
  }
  addEvent(): this {
    return this;
  }
  addLink(): this {
    return this;
  }
  addLinks(): this {
    return this;
  }
  setStatus(status: SpanStatus): this {
    this.#record.status = status;
    return this;
  }
  updateName(): this {
    return this;
  }
  end(): void {
    this.#record.ended = true;
  }
  isRecording(): boolean {
    return !this.#record.ended;
  }
  recordException(exception: Exception): void {
    this.#record.exceptions.push(exception);
  }
}

export class MemoryTracer implements Tracer {
  readonly spans: RecordedSpan[] = [];
  readonly scope: string;

  constructor(scope = 'test') {
    this.scope = scope;
  }

  startSpan(name: string, options: SpanOptions = {}, context?: Context): Span {
    const parent = trace.getSpan(context ?? otelContext.active())?.spanContext();
    const record: RecordedSpan = {
      name,
      scope: this.scope,
      spanId: randomBytes(8).toString('hex'),
      traceId: parent?.traceId ?? randomBytes(16).toString('hex'),
      parentSpanId: parent?.spanId,
      attributes: { ...options.attributes },
      status: { code: SpanStatusCode.UNSET },
      exceptions: [],
      ended: false,
    };
    this.spans.push(record);
    return new MemorySpan(record);
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(
    name: string,
    options: SpanOptions,
    fn: F,
  ): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(
    name: string,
    options: SpanOptions,
    context: Context,
    fn: F,
  ): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(
    name: string,
    ...rest: [F] | [SpanOptions, F] | [SpanOptions, Context, F]
  ): ReturnType<F> {
    const fn = rest[rest.length - 1] as F;
    const options = rest.length > 1 ? (rest[0] as SpanOptions) : {};
    const parent = rest.length > 2 ? (rest[1] as Context) : otelContext.active();
    const span = this.startSpan(name, options, parent);
    return otelContext.with(trace.setSpan(parent, span), () => fn(span)) as ReturnType<F>;
  }

  named(name: string): RecordedSpan[] {
    return this.spans.filter((s) => s.name === name);
  }
}

export class MemoryTracerProvider implements TracerProvider {
  readonly tracers = new Map<string, MemoryTracer>();
  getTracer(name: string): Tracer {
    let tracer = this.tracers.get(name);
    if (!tracer) {
      tracer = new MemoryTracer(name);
      this.tracers.set(name, tracer);
    }
    return tracer;
  }
  /** Every span of every tracer, in start order within each tracer. */
  get spans(): RecordedSpan[] {
    return [...this.tracers.values()].flatMap((t) => t.spans);
  }
}

export interface RecordedMeasurement {
  readonly instrument: string;
  readonly kind: 'histogram' | 'counter' | 'gauge';
  readonly value: number;
  readonly attributes: MetricAttributes;
}

export interface InstrumentInfo {
  readonly name: string;
  readonly options: MetricOptions | undefined;
}

class MemoryObservable implements ObservableGauge, ObservableCounter, ObservableUpDownCounter {
  readonly callbacks = new Set<ObservableCallback>();
  addCallback(callback: ObservableCallback): void {
    this.callbacks.add(callback);
  }
  removeCallback(callback: ObservableCallback): void {
    this.callbacks.delete(callback);
  }
}

export class MemoryMeter implements Meter {
  readonly measurements: RecordedMeasurement[] = [];
  readonly instruments: InstrumentInfo[] = [];
  readonly observables = new Map<string, MemoryObservable>();

  #sync(name: string, kind: 'histogram' | 'counter', options?: MetricOptions) {
    this.instruments.push({ name, options });
    const push = (value: number, attributes: MetricAttributes = {}) => {
      this.measurements.push({ instrument: name, kind, value, attributes });
    };
    return { record: push, add: push };
  }

  createHistogram(name: string, options?: MetricOptions): Histogram {
    return this.#sync(name, 'histogram', options);
  }
  createCounter(name: string, options?: MetricOptions): Counter {
    return this.#sync(name, 'counter', options);
  }
  createUpDownCounter(name: string, options?: MetricOptions): UpDownCounter {
    return this.#sync(name, 'counter', options);
  }
  createGauge(name: string, options?: MetricOptions): Gauge {
    return this.#sync(name, 'histogram', options);
  }
  #observable(name: string, options?: MetricOptions): MemoryObservable {
    this.instruments.push({ name, options });
    const observable = new MemoryObservable();
    this.observables.set(name, observable);
    return observable;
  }
  createObservableGauge(name: string, options?: MetricOptions): ObservableGauge {
    return this.#observable(name, options);
  }
  createObservableCounter(name: string, options?: MetricOptions): ObservableCounter {
    return this.#observable(name, options);
  }
  createObservableUpDownCounter(name: string, options?: MetricOptions): ObservableUpDownCounter {
    return this.#observable(name, options);
  }
  addBatchObservableCallback(_callback: BatchObservableCallback, _obs: Observable[]): void {}
  removeBatchObservableCallback(_callback: BatchObservableCallback, _obs: Observable[]): void {}

  /** Runs every observable callback, as a metric reader's collection would; returns the readings. */
  async collect(): Promise<RecordedMeasurement[]> {
    const out: RecordedMeasurement[] = [];
    for (const [name, observable] of this.observables) {
      for (const callback of observable.callbacks) {
        await callback({
          observe: (value: number, attributes: MetricAttributes = {}) => {
            out.push({ instrument: name, kind: 'gauge', value, attributes });
          },
        });
      }
    }
    return out;
  }

  /** Measurements of one instrument. */
  of(instrument: string): RecordedMeasurement[] {
    return this.measurements.filter((m) => m.instrument === instrument);
  }
}

export class MemoryMeterProvider implements MeterProvider {
  readonly meters = new Map<string, MemoryMeter>();
  getMeter(name: string): Meter {
    let meter = this.meters.get(name);
    if (!meter) {
      meter = new MemoryMeter();
      this.meters.set(name, meter);
    }
    return meter;
  }
}

/** Context propagation over AsyncLocalStorage, as the SDK's async-hooks context manager does. */
export class AsyncLocalContextManager implements ContextManager {
  readonly #storage = new AsyncLocalStorage<Context>();

  active(): Context {
    return this.#storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    context: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.#storage.run(context, () => fn.call(thisArg, ...args));
  }
  bind<T>(_context: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.#storage.disable();
    return this;
  }
}
