import { describe, expect, it } from 'vitest';
import { ProcessStateError } from '../errors/process-errors.js';
import { ManualClock } from '../testing/manual-clock.js';
import { recordingLogger } from '../testing/recording-logger.js';
import { rejectionOf } from '../testing/rejection.js';
import type {
  AttachedProcess,
  LaunchedExit,
  ProcessLauncher,
  ProcessSink,
} from './process-launcher.js';
import { ProcessTable } from './process-table.js';

/**
 * A sandbox whose processes several clients share, as on E2B: processes are named by a backend
 * id, and a client that did not start one can attach it by that id.
 */
class SharedBackend {
  readonly processes = new Map<
    string,
    { command: string; sinks: ProcessSink[]; end: (exit: LaunchedExit) => void; kills: string[] }
  >();
  attachCalls: string[] = [];
  detached: string[] = [];
  #pid = 100;
  /** When set, attach waits for it (an attach in flight). */
  attachGate: Promise<void> | undefined;

  spawn(command: string, id = `p${++this.#pid}`): string {
    let end!: (exit: LaunchedExit) => void;
    const exited = new Promise<LaunchedExit>((resolve) => (end = resolve));
    const entry = { command, sinks: [] as ProcessSink[], end, kills: [] as string[], exited };
    this.processes.set(id, entry);
    void exited.then(() => this.processes.delete(id));
    return id;
  }

  emit(id: string, text: string): void {
    for (const sink of this.processes.get(id)?.sinks ?? []) sink.stdout(text);
  }

  #control(id: string, exited: Promise<LaunchedExit>) {
    const entry = this.processes.get(id)!;
    return {
      exited,
      kill: async (signal: string) => {
        entry.kills.push(signal);
        entry.end({ exitCode: null, signal });
      },
    };
  }

  launcher(): ProcessLauncher {
    return {
      launch: async (command, _options, sink) => {
        const id = this.spawn(command);
        const entry = this.processes.get(id)!;
        entry.sinks.push(sink);
        const exited = new Promise<LaunchedExit>((resolve) => {
          const end = entry.end;
          entry.end = (exit) => {
            end(exit);
            resolve(exit);
          };
        });
        return { id, ...this.#control(id, exited) };
      },
      attach: async (id, sink): Promise<AttachedProcess | undefined> => {
        this.attachCalls.push(id);
        if (this.attachGate) await this.attachGate;
        const entry = this.processes.get(id);
        if (!entry) return undefined;
        entry.sinks.push(sink);
        const exited = new Promise<LaunchedExit>((resolve) => {
          const end = entry.end;
          entry.end = (exit) => {
            end(exit);
            resolve(exit);
          };
        });
        return {
          id,
          command: entry.command,
          ...this.#control(id, exited),
          detach: async () => {
            this.detached.push(id);
            entry.sinks = entry.sinks.filter((s) => s !== sink);
          },
        };
      },
      discover: async () => [...this.processes.keys()],
    };
  }
}

function client(backend: SharedBackend, options: { maxRunning?: number } = {}) {
  const logger = recordingLogger();
  const table = new ProcessTable({
    launcher: backend.launcher(),
    stdin: false,
    clock: new ManualClock(),
    logger,
    ...options,
  });
  return { table, logger };
}

describe('ProcessTable: processes other clients started', () => {
  it('names a process by the backend id, so another client finds it by that id', async () => {
    const backend = new SharedBackend();
    const a = client(backend).table;
    const b = client(backend).table;
    const started = await a.start('dev-server');
    expect(started.id).toBe('p101');

    const seen = await b.get(started.id);
    expect(seen?.command).toBe('dev-server');
    backend.emit(started.id, 'ready\n');
    expect((await seen!.output()).text).toBe('ready\n');
    await seen!.kill('SIGTERM');
    expect(await seen!.wait()).toEqual({ exitCode: null, signal: 'SIGTERM', timedOut: false });
    expect(await started.wait()).toMatchObject({ signal: 'SIGTERM' });
  });

  it('answers an unknown or oversized id with undefined; the oversized one never reaches the backend', async () => {
    const backend = new SharedBackend();
    const { table } = client(backend);
    expect(await table.get('p999')).toBeUndefined();
    expect(await table.get('p'.repeat(65))).toBeUndefined();
    expect(await table.get('')).toBeUndefined();
    expect(backend.attachCalls).toEqual(['p999']);
  });

  it('attaches a process once however many callers ask at the same moment', async () => {
    const backend = new SharedBackend();
    const id = backend.spawn('watch');
    let open!: () => void;
    backend.attachGate = new Promise((resolve) => (open = resolve));
    const { table } = client(backend);
    const first = table.get(id);
    const second = table.get(id);
    open();
    const [one, two] = await Promise.all([first, second]);
    expect(backend.attachCalls).toEqual([id]);
    backend.emit(id, 'x');
    expect((await one!.output()).text).toBe('x');
    expect((await two!.output()).text).toBe('x');
  });

  it('list() attaches what other clients run, up to the running limit, and says what it left out', async () => {
    const backend = new SharedBackend();
    backend.spawn('one');
    backend.spawn('two');
    backend.spawn('three');
    const { table, logger } = client(backend, { maxRunning: 2 });
    const listed = await table.list();
    expect(listed.map((p) => p.command)).toEqual(['one', 'two']);
    expect(logger.lines).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        msg: 'background processes of other clients were left unattached',
        fields: expect.objectContaining({ unattached: 1, limit: 2 }),
      }),
    );
  });

  it('counts attached processes against the running limit', async () => {
    const backend = new SharedBackend();
    const other = backend.spawn('other');
    const { table } = client(backend, { maxRunning: 1 });
    await table.start('mine');
    const error = await rejectionOf(table.get(other));
    expect(error).toBeInstanceOf(ProcessStateError);
  });

  it('keeps one record when this client starts the process an attach in flight is reaching', async () => {
    const backend = new SharedBackend();
    let open!: () => void;
    backend.attachGate = new Promise((resolve) => (open = resolve));
    const { table } = client(backend);
    // A caller guesses the id the next start will get, and asks for it first.
    const guessed = table.get('p101');
    const started = await table.start('server');
    expect(started.id).toBe('p101');
    open();
    const found = await guessed;
    expect(found?.id).toBe('p101');
    expect(backend.detached).toEqual(['p101']);
    expect(await table.list()).toHaveLength(1);
  });

  it('gives a reused backend id to the new process and keeps it when the old one is forgotten', async () => {
    const backend = new SharedBackend();
    const shared = backend.launcher();
    // A backend that hands out the same id again once its process ended (a reused pid).
    const table = new ProcessTable({
      launcher: {
        launch: async (command, options, sink) => ({
          ...(await shared.launch(command, options, sink)),
          id: 'p7',
        }),
      },
      stdin: false,
      clock: new ManualClock(),
      keepEnded: 1,
    });
    const old = await table.start('old');
    await old.kill('SIGKILL');
    await old.wait();
    const fresh = await table.start('fresh');
    expect(fresh.id).toBe('p7');
    await fresh.kill('SIGKILL');
    await fresh.wait();
    // Forgetting the old process (keepEnded: 1) must not forget the new one that has its id.
    expect((await table.get('p7'))?.command).toBe('fresh');
  });

  it('lets go of what it attached when the client closes (the other client still runs it), and attaches nothing after', async () => {
    const backend = new SharedBackend();
    const id = backend.spawn('server');
    const later = backend.spawn('later');
    const { table } = client(backend);
    await table.get(id);
    await table.close();
    expect(backend.processes.get(id)?.kills).toEqual([]);
    expect(backend.detached).toEqual([id]);
    expect(await table.get(later)).toBeUndefined();
    expect(await table.list()).toHaveLength(0);
    expect(backend.attachCalls).toEqual([id]);
  });
});
