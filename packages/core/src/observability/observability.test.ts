import type { ExecResult } from '../contract/sandbox-exec.js';
import { context, metrics, SpanStatusCode, trace } from '@opentelemetry/api';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  InvalidArgumentError,
  OwnershipBackendError,
  SandboxFileNotFoundError,
} from '../errors/errors.js';
import { getSandboxLeaseManager } from '../execution-leases/lease-manager-registry.js';
import type { Logger } from '../logging/logger.js';
import { instrumentProvider, METRIC_NAMES, SPAN_NAMES } from './observability.js';
import type {
  AcquirePath,
  SandboxCounts,
  SandboxProviderCounts,
  SandboxProviderEventListener,
  SandboxProviderEvents,
} from '../contract/provider-events.js';
import { SandboxProviderEventEmitter } from '../contract/provider-events.js';
import type { TelemetryMeter, TelemetryTracer } from './observability-otel.js';
import {
  AsyncLocalContextManager,
  MemoryMeter,
  MemoryMeterProvider,
  MemoryTracer,
  MemoryTracerProvider,
} from './observability-test-support.js';
import { Sandbox } from '../contract/sandbox.js';
import type { WriteFileOptions } from '../contract/sandbox.js';
import { SandboxProvider } from '../contract/sandbox-provider.js';
import type { AcquireOptions } from '../contract/sandbox-provider.js';
import { Deferred, settle } from '../testing/deferred.js';
import { MemorySandbox } from '../testing/memory-sandbox.js';
import { MemorySandboxProvider } from '../testing/memory-sandbox-provider.js';

/** An importer for which `@opentelemetry/api` is not installed, as Node reports it. */
const withoutOtel = async (specifier: string): Promise<unknown> => {
  throw Object.assign(new Error(`Cannot find package '${specifier}' imported from /app/x.js`), {
    code: 'ERR_MODULE_NOT_FOUND',
  });
};

function recordingLogger() {
  const lines: { level: string; msg: string; fields: Record<string, unknown> | undefined }[] = [];
  const at =
    (level: string) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      lines.push({ level, msg, fields });
    };
  const logger: Logger = {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
  };
  return { logger, lines };
}

/**
 * A provider that reports how each acquire was served (per thread, set by the test) and can hold an
 * acquire open, so tests choose the interleaving.
 */
class ReportingProvider
  extends MemorySandboxProvider
  implements SandboxProviderEvents, SandboxProviderCounts
{
  readonly events = new SandboxProviderEventEmitter();
  readonly paths = new Map<string, AcquirePath>();
  readonly gates = new Map<string, Deferred>();
  /** Per call, in call order; take precedence over the per-thread settings. */
  readonly queuedPaths: AcquirePath[] = [];
  readonly queuedGates: Deferred[] = [];
  counts: SandboxCounts = { active: 0, warm: 0 };
  /** Called inside acquire, after the path is reported (tests advance their clock here). */
  during: (() => void) | undefined;

  onEvent(listener: SandboxProviderEventListener): () => void {
    return this.events.onEvent(listener);
  }

  sandboxCounts(): SandboxCounts {
    return this.counts;
  }

  override async acquire(options: AcquireOptions = {}): Promise<string> {
    const id = this.idFor(options);
    const path = this.queuedPaths.shift() ?? this.paths.get(options.threadId ?? '');
    if (path) this.events.emit({ type: 'acquire', sandboxId: id, path });
    this.during?.();
    const gate = this.queuedGates.shift() ?? this.gates.get(options.threadId ?? '');
    if (gate) await gate.promise;
    return super.acquire(options);
  }
}

describe('instrumentProvider with an explicit tracer and meter', () => {
  let tracer: MemoryTracer;
  let meter: MemoryMeter;
  const manager = new AsyncLocalContextManager();

  beforeEach(() => {
    tracer = new MemoryTracer();
    meter = new MemoryMeter();
    context.setGlobalContextManager(manager);
  });
  afterEach(() => {
    context.disable();
  });

  it('instruments in place: the same provider and sandbox objects, private state intact', async () => {
    const inner = new MemorySandboxProvider();
    const provider = instrumentProvider(inner, { tracer, meter });
    expect(provider).toBe(inner);
    // Lease managers are registered per provider object: host and provider see one manager.
    expect(getSandboxLeaseManager(provider)).toBe(getSandboxLeaseManager(inner));
    const id = await provider.acquire({ userId: 'u', threadId: 't' });
    expect(id).toBe(provider.idFor({ userId: 'u', threadId: 't' }));
    expect(provider.acquireCalls).toEqual([{ userId: 'u', threadId: 't' }]);
    const sandbox = provider.get(id);
    expect(sandbox).toBeInstanceOf(MemorySandbox);
    // What the provider holds in its own maps is what callers get.
    expect(sandbox).toBe(provider.sandboxes.get(id));
    await sandbox!.writeFile('/mnt/user-data/a.txt', 'x');
    expect(provider.sandboxes.get(id)!.fileText('/mnt/user-data/a.txt')).toBe('x');
    provider.kill(id);
    expect(provider.get(id)).toBeUndefined();
    expect(provider.get('nope')).toBeUndefined();
    expect(tracer.named(SPAN_NAMES.writeFile)).toHaveLength(1);
  });

  it('refuses to instrument a provider twice (every call would be recorded twice)', () => {
    const provider = instrumentProvider(new MemorySandboxProvider(), { tracer, meter });
    expect(() => instrumentProvider(provider, { tracer, meter })).toThrow(InvalidArgumentError);
  });

  it('records an operation once when the sandbox calls its own methods inside it', async () => {
    // No executeCommandInScope of its own: the contract's default delegates to executeCommand.
    class SelfCalling extends Sandbox {
      readonly ran: string[] = [];
      async exec(): Promise<ExecResult> {
        throw new Error('not used: executeCommand is its own');
      }
      override async executeCommand(command: string): Promise<string> {
        this.ran.push(command);
        return 'ok';
      }
      async readFile(): Promise<string> {
        return 'old ';
      }
      async writeFile(path: string, content: string, options?: WriteFileOptions): Promise<void> {
        // An append built from a read of the same sandbox.
        const previous = options?.append ? await this.readFile() : '';
        this.ran.push(`write ${path} ${previous}${content}`);
      }
      downloadFile = async () => new Uint8Array();
      updateFile = async () => {};
      listDir = async () => [];
      glob = async () => ({ paths: [], truncated: false });
      grep = async () => ({ matches: [], truncated: false });
    }
    const sandbox = new SelfCalling('s1');
    class OneSandbox extends SandboxProvider {
      async acquire(): Promise<string> {
        return sandbox.id;
      }
      get(id: string): Sandbox | undefined {
        return id === sandbox.id ? sandbox : undefined;
      }
      async release(): Promise<void> {}
    }
    const provider = instrumentProvider(new OneSandbox(), { tracer, meter });
    const got = provider.get('s1')!;
    expect(got).toBe(sandbox);
    expect(await got.executeCommandInScope('pwd', { scopeId: 'sub' })).toBe('ok');
    await got.writeFile('/mnt/user-data/a', 'new', { append: true });
    expect(sandbox.ran).toEqual(['pwd', 'write /mnt/user-data/a old new']);
    expect(tracer.spans.map((s) => s.name)).toEqual([SPAN_NAMES.execute, SPAN_NAMES.writeFile]);
    expect(meter.of(METRIC_NAMES.operationDuration).map((m) => m.attributes.operation)).toEqual([
      'execute',
      'write_file',
    ]);
    // A later, separate call is recorded again.
    await got.readFile('/mnt/user-data/a');
    expect(tracer.spans.map((s) => s.name).at(-1)).toBe(SPAN_NAMES.readFile);
  });

  it('emits sbx.acquire, sbx.release and sbx.teardown spans with their attributes', async () => {
    const provider = instrumentProvider(new MemorySandboxProvider(), { tracer, meter });
    const id = await provider.acquire({ userId: 'u1', threadId: 't1' });
    await provider.release(id);
    await provider.reset();
    await provider.shutdown();
    expect(tracer.spans.map((s) => s.name)).toEqual([
      SPAN_NAMES.acquire,
      SPAN_NAMES.release,
      SPAN_NAMES.teardown,
      SPAN_NAMES.teardown,
    ]);
    const [acquire, release, reset, shutdown] = tracer.spans;
    expect(acquire?.attributes).toEqual({
      'sbx.user_id': 'u1',
      'sbx.thread_id': 't1',
      'sbx.sandbox_id': id,
      'sbx.acquire.path': 'unknown',
    });
    expect(release?.attributes).toEqual({ 'sbx.sandbox_id': id });
    expect(reset?.attributes).toEqual({ 'sbx.teardown.kind': 'reset' });
    expect(shutdown?.attributes).toEqual({ 'sbx.teardown.kind': 'shutdown' });
    expect(tracer.spans.every((s) => s.ended && s.status.code === SpanStatusCode.UNSET)).toBe(true);
  });

  it('traces every sandbox operation without recording command text', async () => {
    const provider = instrumentProvider(
      new MemorySandboxProvider({ sandboxOptions: { onCommand: (c) => `ran ${c.length}` } }),
      { tracer, meter },
    );
    const id = await provider.acquire({ threadId: 't' });
    const sandbox = provider.get(id)!;
    const secret = 'curl -H "Authorization: Bearer s3cr3t" x';
    expect(await sandbox.executeCommand(secret, { timeoutMs: 5000 })).toBe(`ran ${secret.length}`);
    expect(await sandbox.executeCommandInScope('pwd', { scopeId: 'sub-1' })).toBe('ran 3');
    await sandbox.releaseCommandScope('sub-1');
    await sandbox.writeFile('/mnt/user-data/workspace/a.txt', 'hello\nworld\n');
    await sandbox.writeFile('/mnt/user-data/workspace/a.txt', 'again\n', { append: true });
    await sandbox.updateFile('/mnt/user-data/workspace/b.bin', new Uint8Array([1, 2]));
    expect(await sandbox.readFile('/mnt/user-data/workspace/a.txt', { startLine: 2 })).toBe(
      'world\nagain',
    );
    expect(await sandbox.downloadFile('/mnt/user-data/workspace/b.bin')).toEqual(
      new Uint8Array([1, 2]),
    );
    expect(await sandbox.listDir('/mnt/user-data/workspace')).toHaveLength(2);
    expect((await sandbox.glob('/mnt/user-data', '**/*.txt')).paths).toHaveLength(1);
    expect((await sandbox.grep('/mnt/user-data', 'world')).matches).toHaveLength(1);

    const ops = tracer.spans.slice(1);
    expect(ops.map((s) => s.name)).toEqual([
      'sbx.execute',
      'sbx.execute',
      'sbx.release_scope',
      'sbx.write_file',
      'sbx.write_file',
      'sbx.update_file',
      'sbx.read_file',
      'sbx.download_file',
      'sbx.list_dir',
      'sbx.glob',
      'sbx.grep',
    ]);
    // The scoped call is traced once, although the sandbox's scope method may call executeCommand.
    expect(ops[0]?.attributes).toEqual({ 'sbx.sandbox_id': id, 'sbx.command.timeout_ms': 5000 });
    expect(ops[1]?.attributes).toEqual({ 'sbx.sandbox_id': id, 'sbx.command.scope_id': 'sub-1' });
    expect(ops[4]?.attributes).toMatchObject({ 'sbx.file.path': '/mnt/user-data/workspace/a.txt' });
    expect(ops[4]?.attributes['sbx.file.append']).toBe(true);
    expect(JSON.stringify(tracer.spans)).not.toContain('s3cr3t');

    const durations = meter.of(METRIC_NAMES.operationDuration);
    expect(durations.map((m) => m.attributes.operation)).toEqual(
      ops.map((s) => s.name.slice('sbx.'.length)),
    );
    expect(durations.every((m) => m.attributes.outcome === 'success' && m.value >= 0)).toBe(true);
  });

  it('records a failed call as an error span and rethrows the same error', async () => {
    const provider = instrumentProvider(new MemorySandboxProvider(), { tracer, meter });
    const sandbox = provider.get(await provider.acquire({ threadId: 't' }))!;
    const err = await sandbox.readFile('/mnt/user-data/missing.txt').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxFileNotFoundError);
    const span = tracer.named(SPAN_NAMES.readFile)[0]!;
    expect(span.ended).toBe(true);
    expect(span.status).toEqual({
      code: SpanStatusCode.ERROR,
      message: (err as Error).message,
    });
    expect(span.exceptions).toEqual([err]);
    expect(span.attributes['sbx.error.code']).toBe(SandboxFileNotFoundError.CODE);
    expect(meter.of(METRIC_NAMES.operationDuration).at(-1)?.attributes).toEqual({
      operation: 'read_file',
      outcome: 'error',
    });
  });

  it('makes sbx spans children of the caller span, and provider spans children of sbx.acquire', async () => {
    class TracingInside extends MemorySandboxProvider {
      override async acquire(options?: AcquireOptions): Promise<string> {
        const inner = tracer.startSpan('backend.create');
        inner.end();
        return super.acquire(options);
      }
    }
    const provider = instrumentProvider(new TracingInside(), { tracer, meter });
    await tracer.startActiveSpan('agent.turn', async (turn) => {
      const id = await provider.acquire({ threadId: 't' });
      await provider.get(id)!.executeCommand('ls');
      turn.end();
    });
    const byName = (n: string) => tracer.named(n)[0]!;
    expect(byName('sbx.acquire').parentSpanId).toBe(byName('agent.turn').spanId);
    expect(byName('backend.create').parentSpanId).toBe(byName('sbx.acquire').spanId);
    expect(byName('sbx.execute').parentSpanId).toBe(byName('agent.turn').spanId);
    expect(new Set(tracer.spans.map((s) => s.traceId)).size).toBe(1);
  });

  it('labels acquire latency with the path the provider reported, measured on the given clock', async () => {
    let now = 10_000;
    const provider = new ReportingProvider();
    provider.paths.set('t1', 'create');
    provider.during = () => {
      now += 1500;
    };
    const wrapped = instrumentProvider(provider, { tracer, meter, now: () => now });
    const id = await wrapped.acquire({ threadId: 't1' });
    provider.paths.set('t1', 'reuse');
    provider.during = () => {
      now += 20;
    };
    await wrapped.acquire({ threadId: 't1' });
    await wrapped.acquire({ threadId: 'unreported' });
    expect(meter.of(METRIC_NAMES.acquireDuration).map((m) => [m.value, m.attributes])).toEqual([
      [1.5, { path: 'create', outcome: 'success' }],
      [0.02, { path: 'reuse', outcome: 'success' }],
      [0.02, { path: 'unknown', outcome: 'success' }],
    ]);
    expect(tracer.named(SPAN_NAMES.acquire).map((s) => s.attributes['sbx.acquire.path'])).toEqual([
      'create',
      'reuse',
      'unknown',
    ]);
    expect(tracer.spans[0]?.attributes['sbx.sandbox_id']).toBe(id);
  });

  it('attributes each path to its own acquire when concurrent acquires report out of order', async () => {
    const provider = new ReportingProvider();
    const wrapped = instrumentProvider(provider, { tracer, meter });
    const cases: [string, AcquirePath][] = [
      ['a', 'discover'],
      ['b', 'reclaim'],
      // One thread twice: the same sandbox id, so matching reports by id cannot tell them apart.
      ['c', 'create'],
      ['c', 'reuse'],
    ];
    const gates = cases.map(() => new Deferred());
    provider.queuedPaths.push(...cases.map(([, path]) => path));
    provider.queuedGates.push(...gates);
    const calls = cases.map(([threadId]) => wrapped.acquire({ threadId }));
    await settle();
    // Every call has reported; they finish in the opposite order, so "latest report" (by id or
    // overall) would mislabel them.
    for (const index of [3, 2, 1, 0]) {
      gates[index]!.resolve();
      await calls[index];
    }
    const spans = tracer.named(SPAN_NAMES.acquire);
    expect(
      spans.map((s) => [s.attributes['sbx.thread_id'], s.attributes['sbx.acquire.path']]),
    ).toEqual(cases);
    expect(meter.of(METRIC_NAMES.acquireDuration).map((m) => m.attributes.path)).toEqual([
      'reuse',
      'create',
      'reclaim',
      'discover',
    ]);
  });

  it('uses a path reported outside any acquire call for the next acquire of that id', async () => {
    const provider = new ReportingProvider();
    const wrapped = instrumentProvider(provider, { tracer, meter });
    const id = provider.idFor({ threadId: 'bg' });
    provider.events.emit({ type: 'acquire', sandboxId: id, path: 'discover' });
    await wrapped.acquire({ threadId: 'bg' });
    await wrapped.acquire({ threadId: 'bg' });
    expect(meter.of(METRIC_NAMES.acquireDuration).map((m) => m.attributes.path)).toEqual([
      'discover',
      'unknown',
    ]);
  });

  it('counts adoptions, reaps and ownership errors the provider reports', async () => {
    const provider = new ReportingProvider();
    const wrapped = instrumentProvider(provider, { tracer, meter });
    await wrapped.acquire({ threadId: 'x' }); // telemetry resolved
    provider.events.emit({ type: 'adopt', sandboxId: 's1' });
    provider.events.emit({ type: 'reap', sandboxId: 's2', reason: 'orphan' });
    provider.events.emit({ type: 'reap', sandboxId: 's3', reason: 'duplicate' });
    provider.events.emit({ type: 'ownership-error', operation: 'renew', error: new Error('down') });
    expect(meter.of(METRIC_NAMES.adoptions).map((m) => m.value)).toEqual([1]);
    expect(meter.of(METRIC_NAMES.reaps).map((m) => m.attributes)).toEqual([
      { reason: 'orphan' },
      { reason: 'duplicate' },
    ]);
    expect(meter.of(METRIC_NAMES.ownershipErrors).map((m) => m.attributes)).toEqual([
      { operation: 'renew' },
    ]);
  });

  it('counts events that arrive before telemetry is ready', async () => {
    const importGate = new Deferred<unknown>();
    const provider = new ReportingProvider();
    instrumentProvider(provider, { tracer, meter, importer: () => importGate.promise });
    provider.events.emit({ type: 'adopt', sandboxId: 's1' });
    expect(meter.of(METRIC_NAMES.adoptions)).toEqual([]);
    importGate.resolve(await import('@opentelemetry/api'));
    await settle();
    expect(meter.of(METRIC_NAMES.adoptions).map((m) => m.value)).toEqual([1]);
  });

  it('counts an OwnershipBackendError rejection when the provider reports no events', async () => {
    class StoreDown extends MemorySandboxProvider {
      override async acquire(_options?: AcquireOptions): Promise<string> {
        throw new OwnershipBackendError('redis unreachable');
      }
    }
    const wrapped = instrumentProvider(new StoreDown(), { tracer, meter });
    await expect(wrapped.acquire({ threadId: 't' })).rejects.toBeInstanceOf(OwnershipBackendError);
    expect(meter.of(METRIC_NAMES.ownershipErrors).map((m) => m.attributes)).toEqual([
      { operation: 'acquire' },
    ]);
    expect(meter.of(METRIC_NAMES.acquireDuration).map((m) => m.attributes)).toEqual([
      { path: 'unknown', outcome: 'error' },
    ]);
    expect(tracer.spans[0]?.attributes['sbx.error.code']).toBe('OWNERSHIP_BACKEND');
  });

  it('counts a store failure once when the reporting provider also rejects with it', async () => {
    class ReportsAndRejects extends ReportingProvider {
      override async acquire(_options?: AcquireOptions): Promise<string> {
        const error = new OwnershipBackendError('redis unreachable');
        this.events.emit({ type: 'ownership-error', operation: 'take', error });
        throw error;
      }
    }
    const wrapped = instrumentProvider(new ReportsAndRejects(), { tracer, meter });
    await expect(wrapped.acquire({ threadId: 't' })).rejects.toBeInstanceOf(OwnershipBackendError);
    expect(meter.of(METRIC_NAMES.ownershipErrors).map((m) => m.attributes)).toEqual([
      { operation: 'take' },
    ]);
  });

  it('observes active and warm counts while the provider lives, and stops at shutdown', async () => {
    const provider = new ReportingProvider();
    const wrapped = instrumentProvider(provider, { tracer, meter });
    await wrapped.acquire({ threadId: 't' });
    provider.counts = { active: 2, warm: 1 };
    expect((await meter.collect()).map((m) => [m.instrument, m.value])).toEqual([
      [METRIC_NAMES.activeSandboxes, 2],
      [METRIC_NAMES.warmSandboxes, 1],
    ]);
    expect(provider.events.size).toBe(1);
    await wrapped.reset();
    expect(await meter.collect()).toHaveLength(2);
    await wrapped.shutdown();
    expect(await meter.collect()).toEqual([]);
    expect(provider.events.size).toBe(0);
  });

  it('a collection that took its callbacks before shutdown observes nothing after it', async () => {
    const provider = new ReportingProvider();
    const wrapped = instrumentProvider(provider, { tracer, meter });
    await wrapped.acquire({ threadId: 't' });
    // A metric reader mid-collection holds the callbacks it read before the shutdown removed them.
    const held = [...meter.observables.values()].flatMap((o) => [...o.callbacks]);
    expect(held).toHaveLength(2);
    await wrapped.shutdown();
    const seen: number[] = [];
    for (const callback of held)
      await callback({ observe: (value: number) => void seen.push(value) });
    expect(seen).toEqual([]);
  });

  it('creates no gauges for a provider without counts', async () => {
    const wrapped = instrumentProvider(new MemorySandboxProvider(), { tracer, meter });
    await wrapped.acquire({ threadId: 't' });
    expect(meter.instruments.map((i) => i.name)).not.toContain(METRIC_NAMES.activeSandboxes);
    expect(await meter.collect()).toEqual([]);
  });

  it('logs and skips a gauge reading when sandboxCounts() throws', async () => {
    const { logger, lines } = recordingLogger();
    const provider = new ReportingProvider();
    provider.sandboxCounts = () => {
      throw new Error('count failed');
    };
    const wrapped = instrumentProvider(provider, { tracer, meter, logger });
    await wrapped.acquire({ threadId: 't' });
    expect(await meter.collect()).toEqual([]);
    expect(lines.filter((l) => l.level === 'warn').map((l) => l.fields?.gauge)).toEqual([
      'active',
      'warm',
    ]);
  });

  it('passes calls to the provider in the order they were made while telemetry loads', async () => {
    const importGate = new Deferred<unknown>();
    const inner = new MemorySandboxProvider();
    const id = await inner.acquire({ threadId: 't' });
    const wrapped = instrumentProvider(inner, {
      tracer,
      meter,
      importer: () => importGate.promise,
    });
    const sandbox = wrapped.get(id)!;
    const first = [1, 2, 3].map((n) => sandbox.executeCommand(`echo ${n}`));
    await settle();
    expect(inner.get(id)!.commands).toEqual([]);
    importGate.resolve(await import('@opentelemetry/api'));
    // Issued in the same turn as the resolution, before the queued calls had their turn.
    const later = Promise.resolve().then(() => sandbox.executeCommand('echo 4'));
    await Promise.all([...first, later]);
    expect(inner.get(id)!.commands.map((c) => c.command)).toEqual([
      'echo 1',
      'echo 2',
      'echo 3',
      'echo 4',
    ]);
  });

  it('runs uninstrumented, with a warning, when the meter throws while creating instruments', async () => {
    const { logger, lines } = recordingLogger();
    const broken: TelemetryMeter = {
      createHistogram: () => {
        throw new Error('meter broken');
      },
      createCounter: () => {
        throw new Error('meter broken');
      },
      createObservableGauge: () => {
        throw new Error('meter broken');
      },
    };
    const wrapped = instrumentProvider(new MemorySandboxProvider(), {
      tracer,
      meter: broken,
      logger,
    });
    expect(await wrapped.acquire({ threadId: 't' })).toBe('memory:default:t');
    expect(lines.some((l) => l.level === 'warn' && l.msg.includes('telemetry setup failed'))).toBe(
      true,
    );
    expect(tracer.spans).toEqual([]);
  });
});

describe('instrumentProvider through the global @opentelemetry/api', () => {
  let tracers: MemoryTracerProvider;
  let meters: MemoryMeterProvider;

  beforeEach(() => {
    tracers = new MemoryTracerProvider();
    meters = new MemoryMeterProvider();
    expect(trace.setGlobalTracerProvider(tracers)).toBe(true);
    expect(metrics.setGlobalMeterProvider(meters)).toBe(true);
    context.setGlobalContextManager(new AsyncLocalContextManager());
  });
  afterEach(() => {
    trace.disable();
    metrics.disable();
    context.disable();
  });

  it('takes the global tracer and meter under the @sbx/core scope when none are given', async () => {
    const wrapped = instrumentProvider(new MemorySandboxProvider());
    const id = await wrapped.acquire({ threadId: 't' });
    await wrapped.get(id)!.executeCommand('true');
    expect(tracers.spans.map((s) => [s.scope, s.name])).toEqual([
      ['@sbx/core', 'sbx.acquire'],
      ['@sbx/core', 'sbx.execute'],
    ]);
    const meter = meters.meters.get('@sbx/core');
    expect(meter?.of(METRIC_NAMES.acquireDuration)).toHaveLength(1);
  });

  it('is a pass-through that records nothing when @opentelemetry/api is not installed', async () => {
    const { logger, lines } = recordingLogger();
    const inner = new MemorySandboxProvider({ sandboxOptions: { onCommand: () => 'out' } });
    const wrapped = instrumentProvider(inner, { importer: withoutOtel, logger });
    const id = await wrapped.acquire({ threadId: 't' });
    expect(await wrapped.get(id)!.executeCommand('x')).toBe('out');
    await wrapped.release(id);
    await wrapped.shutdown();
    expect(inner.releaseCalls).toEqual([id]);
    // The globals are registered, but without the API module sbx cannot reach them.
    expect(tracers.spans).toEqual([]);
    expect(meters.meters.size).toBe(0);
    expect(lines.map((l) => [l.level, l.msg])).toContainEqual([
      'debug',
      '@opentelemetry/api is not installed; global telemetry is off',
    ]);
  });

  it('writes nothing to the console without a logger (libraries are silent by default)', async () => {
    const spies = (['debug', 'info', 'log', 'warn', 'error'] as const).map((m) =>
      vi.spyOn(console, m).mockImplementation(() => {}),
    );
    try {
      const wrapped = instrumentProvider(new ReportingProvider(), { importer: withoutOtel });
      await wrapped.acquire({ threadId: 't' });
      await wrapped.shutdown();
      for (const spy of spies) expect(spy).not.toHaveBeenCalled();
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });

  it('still uses an explicit tracer when @opentelemetry/api is not installed', async () => {
    const tracer = new MemoryTracer();
    const wrapped = instrumentProvider(new MemorySandboxProvider(), {
      tracer,
      importer: withoutOtel,
    });
    await wrapped.acquire({ threadId: 't' });
    expect(tracer.spans.map((s) => s.name)).toEqual(['sbx.acquire']);
  });

  it('accepts the real API tracer and meter types', () => {
    // Compile-time check: any 1.x API tracer/meter satisfies sbx's structural interfaces.
    const apiTracer: TelemetryTracer = trace.getTracer('x');
    const apiMeter: TelemetryMeter = metrics.getMeter('x');
    expect(typeof apiTracer.startSpan).toBe('function');
    expect(typeof apiMeter.createHistogram).toBe('function');
  });
});
