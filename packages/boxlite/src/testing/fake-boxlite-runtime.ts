import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CallGate, busyboxBin, runOnHost, startOnHost } from '@sbx/core/testing';
import type { Userland } from '@sbx/core/testing';
import type {
  BoxliteBoxHandle,
  BoxliteBoxSpec,
  BoxliteBoxSummary,
  BoxliteExecOptions,
  BoxliteExecResult,
  BoxliteExecution,
  BoxliteRuntime,
  BoxliteStartOptions,
} from '../boxlite-runtime.js';

export type FakeRuntimeMethod = 'create' | 'list' | 'get' | 'close' | 'exec' | 'start' | 'stop';

/** Linux signal numbers, as the SDK's `Execution.signal` takes them. */
const SIGNAL_NAMES: Record<number, NodeJS.Signals> = {
  1: 'SIGHUP',
  2: 'SIGINT',
  9: 'SIGKILL',
  15: 'SIGTERM',
};

export interface FakeExecCall {
  readonly box: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>> | undefined;
  readonly options: BoxliteExecOptions;
}

export interface FakeBoxliteRuntimeOptions {
  /** Parent of the per-box directories; default a fresh temp directory (removed by `dispose`). */
  root?: string;
  /** VM paths that live in the box directory. Default `/mnt/user-data`, `/mnt/skills`. */
  mapped?: readonly string[];
  userland?: Userland;
  /** Refuse a second live box of one name, as the real runtime does. Default true. */
  uniqueNames?: boolean;
  /** Wall clock (ms) stamped as each box's `createdAt`; default `Date.now`. */
  now?: () => number;
}

/**
 * A stand-in micro-VM: a directory on the host whose commands run for real through the host
 * shell (`runOnHost` of `@sbx/core/testing`). Failures are injected per box: `dieWith` makes
 * every later exec fail (a dead VM), `failNextExec` fails one, `failStop` makes stops fail (`stopFailures` the next ones).
 */
export class FakeBox implements BoxliteBoxHandle {
  readonly name: string;
  readonly dir: string;
  readonly spec: BoxliteBoxSpec | undefined;
  /** ISO 8601, as the runtime's box info reports it. */
  readonly createdAt: string;
  readonly #runtime: FakeBoxliteRuntime;
  running = true;
  stopCalls = 0;
  /** Signals sent to started executions, in order (`SIGKILL` for the SDK's `kill()`). */
  readonly signals: NodeJS.Signals[] = [];
  /** When set, every exec rejects with it. */
  dead: Error | undefined;
  /** Rejects the next execs with these errors, in order. */
  readonly execFailures: Error[] = [];
  /** When set, `stop()` rejects with it (and the box keeps running). */
  failStop: Error | undefined;
  /** Rejects the next stops with these errors, in order (the box keeps running). */
  readonly stopFailures: Error[] = [];

  constructor(
    runtime: FakeBoxliteRuntime,
    name: string,
    dir: string,
    spec: BoxliteBoxSpec | undefined,
    createdAt: string,
  ) {
    this.#runtime = runtime;
    this.name = name;
    this.dir = dir;
    this.spec = spec;
    this.createdAt = createdAt;
  }

  dieWith(message = 'vsock disconnected'): this {
    this.dead = new Error(message);
    return this;
  }

  failNextExec(error: Error): this {
    this.execFailures.push(error);
    return this;
  }

  exec(
    command: string,
    args: readonly string[],
    env: Readonly<Record<string, string>> | undefined,
    options: BoxliteExecOptions = {},
  ): Promise<BoxliteExecResult> {
    const call: FakeExecCall = { box: this.name, command, args: [...args], env, options };
    this.#runtime.execCalls.push(call);
    return this.#runtime.gate.invoke('exec', [call], async () => {
      if (this.dead) throw this.dead;
      const failure = this.execFailures.shift();
      if (failure) throw failure;
      if (!this.running) throw new Error(`box has been stopped: ${this.name}`);
      return runOnHost({
        boxDir: this.dir,
        mapped: this.#runtime.mapped,
        command,
        args,
        env: env ?? {},
        timeoutSecs: options.timeoutSecs,
        signal: options.signal,
        busyboxDir: await this.#runtime.busyboxDir(),
      });
    });
  }

  /** Like `exec`, streaming: a live process on the host, fed and signalled through the handle. */
  start(
    command: string,
    args: readonly string[],
    env: Readonly<Record<string, string>> | undefined,
    options: BoxliteStartOptions,
  ): Promise<BoxliteExecution> {
    const { onStdout, onStderr, ...rest } = options;
    const call: FakeExecCall = { box: this.name, command, args: [...args], env, options: rest };
    this.#runtime.execCalls.push(call);
    return this.#runtime.gate.invoke('start', [call], async () => {
      if (this.dead) throw this.dead;
      const failure = this.execFailures.shift();
      if (failure) throw failure;
      if (!this.running) throw new Error(`box has been stopped: ${this.name}`);
      const process = startOnHost({
        boxDir: this.dir,
        mapped: this.#runtime.mapped,
        command,
        args,
        env: env ?? {},
        timeoutSecs: options.timeoutSecs,
        busyboxDir: await this.#runtime.busyboxDir(),
        stdin: true,
        onStdout,
        onStderr,
      });
      const dead = () => this.dead ?? (this.running ? undefined : new Error('box stopped'));
      return {
        ended: process.exited.then((exit) => {
          if (exit.error) throw exit.error;
          return { exitCode: exit.exitCode };
        }),
        write: async (data) => {
          const gone = dead();
          if (gone) throw gone;
          process.write(data);
        },
        closeStdin: async () => process.closeStdin(),
        kill: async () => {
          const gone = dead();
          if (gone) throw gone;
          this.signals.push('SIGKILL');
          process.kill('SIGKILL');
        },
        signal: async (signal) => {
          const gone = dead();
          if (gone) throw gone;
          const name = SIGNAL_NAMES[signal] ?? 'SIGTERM';
          this.signals.push(name);
          process.kill(name);
        },
      };
    });
  }

  stop(): Promise<void> {
    return this.#runtime.gate.invoke('stop', [this.name], async () => {
      this.stopCalls += 1;
      const failure = this.stopFailures.shift() ?? this.failStop;
      if (failure) throw failure;
      this.running = false;
      this.#runtime.forgetBox(this);
    });
  }
}

export class FakeBoxliteRuntime implements BoxliteRuntime {
  readonly gate = new CallGate<FakeRuntimeMethod>();
  readonly mapped: readonly string[];
  readonly userland: Userland;
  readonly uniqueNames: boolean;
  /** Live boxes by name. */
  readonly boxes = new Map<string, FakeBox>();
  /** Every box ever created or seeded, in order. */
  readonly history: FakeBox[] = [];
  readonly execCalls: FakeExecCall[] = [];
  /** Rejects the next creates with these errors, in order. */
  readonly createFailures: Error[] = [];
  /** Rejects the next lists with these errors, in order. */
  readonly listFailures: Error[] = [];
  closed = false;
  #root: Promise<string> | undefined;
  readonly #ownsRoot: boolean;
  readonly #now: () => number;
  #busybox: Promise<string> | undefined;

  constructor(options: FakeBoxliteRuntimeOptions = {}) {
    this.#root = options.root === undefined ? undefined : Promise.resolve(options.root);
    this.#ownsRoot = options.root === undefined;
    this.mapped = options.mapped ?? ['/mnt/user-data', '/mnt/skills'];
    this.userland = options.userland ?? 'host';
    this.uniqueNames = options.uniqueNames ?? true;
    this.#now = options.now ?? Date.now;
  }

  /** Boxes created through `create` (not seeded), in order. */
  get created(): FakeBox[] {
    return this.history.filter((b) => b.spec !== undefined);
  }

  create(spec: BoxliteBoxSpec): Promise<BoxliteBoxHandle> {
    return this.gate.invoke('create', [spec], async () => {
      const failure = this.createFailures.shift();
      if (failure) throw failure;
      if (this.uniqueNames && this.boxes.has(spec.name)) {
        throw new Error(`box name already in use: ${spec.name}`);
      }
      return this.#add(spec.name, spec);
    });
  }

  list(): Promise<BoxliteBoxSummary[]> {
    return this.gate.invoke('list', [], async () => {
      const failure = this.listFailures.shift();
      if (failure) throw failure;
      // Boxes are created with auto-remove, so a stopped box leaves the runtime's list.
      return [...this.boxes.values()].map((b) => ({
        id: `id-${b.name}`,
        name: b.name,
        running: b.running,
        status: b.running ? 'running' : 'stopped',
        createdAt: b.createdAt,
      }));
    });
  }

  get(name: string): Promise<BoxliteBoxHandle | undefined> {
    return this.gate.invoke('get', [name], async () => this.boxes.get(name));
  }

  close(): Promise<void> {
    return this.gate.invoke('close', [], async () => {
      this.closed = true;
    });
  }

  /** A box that already runs when the provider starts (left by an earlier process). */
  async seed(name: string): Promise<FakeBox> {
    return this.#add(name, undefined);
  }

  /** The box most recently created under `name`. */
  latest(name: string): FakeBox | undefined {
    return this.history.filter((b) => b.name === name).at(-1);
  }

  forgetBox(box: FakeBox): void {
    if (this.boxes.get(box.name) === box) this.boxes.delete(box.name);
  }

  /** Removes every box directory. */
  async dispose(): Promise<void> {
    if (this.#root !== undefined && this.#ownsRoot) {
      await rm(await this.#root, { recursive: true, force: true });
    }
  }

  busyboxDir(): Promise<string | undefined> {
    if (this.userland !== 'busybox') return Promise.resolve(undefined);
    this.#busybox ??= this.#rootDir().then(busyboxBin);
    return this.#busybox;
  }

  #rootDir(): Promise<string> {
    this.#root ??= mkdtemp(path.join(tmpdir(), 'sbx-boxlite-fake-'));
    return this.#root;
  }

  async #add(name: string, spec: BoxliteBoxSpec | undefined): Promise<FakeBox> {
    const dir = path.join(await this.#rootDir(), `${name}.${this.history.length}`);
    await mkdir(dir, { recursive: true });
    const box = new FakeBox(this, name, dir, spec, new Date(this.#now()).toISOString());
    this.boxes.set(name, box);
    this.history.push(box);
    return box;
  }
}
