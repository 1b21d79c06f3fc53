import { CallGate } from '@sbx/core/testing';
import type { Userland } from '@sbx/core/testing';
import type {
  OpenSandboxCommands,
  OpenSandboxConnectionConfig,
  OpenSandboxConnectionOptions,
  OpenSandboxCreateOptions,
  OpenSandboxExecution,
  OpenSandboxFiles,
  OpenSandboxListFilter,
  OpenSandboxListPage,
  OpenSandboxManager,
  OpenSandboxProtocol,
  OpenSandboxRemote,
  OpenSandboxRunOptions,
  OpenSandboxSandboxInfo,
  OpenSandboxSdk,
  OpenSandboxWriteEntry,
} from '../opensandbox-sdk.js';
import { ExecdLineSplitter, commandEvents, executionFromEvents } from './execd-output.js';
import { HostShellMachine } from './host-shell-machine.js';
import { apiErrorOf, sandboxNotFound } from './fake-sdk-errors.js';

/**
 * An in-memory stand-in for `@alibaba-group/opensandbox`, for the provider's lifecycle and race
 * tests. Each remote is a `HostShellMachine` (commands run for real in bash, files live in a
 * private temp directory), its output reaches the adapter as execd would send it, and every SDK
 * call goes through `gate` (a `CallGate` from @sbx/core/testing) so a test can hold a call at an
 * exact point, plus `failNext` for injected failures and `respondTo` for scripted command results
 * (`fakeExecution` of `execd-output.ts`; the SDK-shaped errors are in `fake-sdk-errors.ts`).
 *
 * One concept, the fake SDK's state (its remotes, the gate, the failure and responder rules) and
 * the remote handles that act on it: each handle's calls read and write that shared state.
 */

export type FakeOpenSandboxOp =
  | 'create'
  | 'run'
  | 'readBytes'
  | 'readBytesStream'
  | 'writeFiles'
  | 'renew'
  | 'kill'
  | 'close'
  | 'list'
  | 'closeManager';

/** Page size the lifecycle API uses when a listing names none. */
const DEFAULT_LIST_PAGE_SIZE = 20;

export interface FakeCreateRecord {
  readonly remoteId: string;
  readonly options: OpenSandboxCreateOptions;
}

export interface FakeRemoteState {
  readonly id: string;
  readonly machine: HostShellMachine;
  readonly options: OpenSandboxCreateOptions;
  alive: boolean;
  /** What the lifecycle API reports as `status.state`; `Running` from creation on. */
  state: string;
  readonly createdAt: Date;
  expiresAt: Date | null;
  readonly renewals: number[];
  kills: number;
  closes: number;
}

export interface FakeRunRecord {
  readonly remoteId: string;
  readonly command: string;
  readonly options: OpenSandboxRunOptions | undefined;
}

type Responder = (
  command: string,
  options: OpenSandboxRunOptions | undefined,
) => OpenSandboxExecution | Error | undefined;

interface FailRule {
  readonly op: FakeOpenSandboxOp;
  readonly remoteId: string | undefined;
  readonly error: unknown;
  remaining: number;
}

class FakeConnectionConfig implements OpenSandboxConnectionConfig {
  readonly options: OpenSandboxConnectionOptions;
  readonly domain: string;
  readonly protocol: OpenSandboxProtocol;
  readonly apiKey: string | undefined;
  readonly requestTimeoutSeconds: number;
  readonly useServerProxy: boolean;
  readonly disableMetrics: boolean;

  constructor(options: OpenSandboxConnectionOptions = {}) {
    this.options = { ...options };
    this.domain = options.domain ?? 'localhost:8080';
    this.protocol = options.protocol ?? 'http';
    this.apiKey = options.apiKey;
    this.requestTimeoutSeconds = options.requestTimeoutSeconds ?? 30;
    this.useServerProxy = options.useServerProxy ?? false;
    this.disableMetrics = options.disableMetrics ?? false;
  }
}

const STREAM_CHUNK_BYTES = 64 * 1024;

/** Like `fetch`: the call rejects as soon as the caller's signal aborts, even while it is held. */
function abortable<T>(signal: AbortSignal | undefined, call: Promise<T>): Promise<T> {
  if (signal === undefined) return call;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    call.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

export class FakeOpenSandbox {
  readonly gate = new CallGate<FakeOpenSandboxOp>();
  readonly sdk: OpenSandboxSdk;
  readonly creates: FakeCreateRecord[] = [];
  readonly remotes = new Map<string, FakeRemoteState>();
  readonly runs: FakeRunRecord[] = [];
  /** Download streams started and finished (a finished stream ran its cleanup). */
  readonly streams = { opened: 0, closed: 0 };
  readonly #failures: FailRule[] = [];
  readonly #responders: { match: (command: string) => boolean; respond: Responder }[] = [];
  #next = 0;
  readonly #userland: Userland;
  readonly #now: () => number;

  /**
   * `userland: 'busybox'` gives every remote only busybox tools (the portable search path); `now`
   * is the server's wall clock (creation and expiry times), default `Date.now`.
   */
  constructor(options: { userland?: Userland; now?: () => number } = {}) {
    this.#userland = options.userland ?? 'host';
    this.#now = options.now ?? Date.now;
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const fake = this;
    this.sdk = {
      Sandbox: {
        create: (options: OpenSandboxCreateOptions) =>
          fake.#call('create', undefined, [options], () => fake.#create(options)),
      },
      ConnectionConfig: FakeConnectionConfig,
      SandboxManager: {
        create: (): OpenSandboxManager => ({
          listSandboxInfos: (filter: OpenSandboxListFilter = {}) =>
            fake.#call('list', undefined, [filter], async () => fake.#list(filter)),
          close: () => fake.#call('closeManager', undefined, [], async () => {}),
        }),
      },
    };
  }

  /** The `ConnectionConfig` options of every create, in order. */
  get connectionOptions(): OpenSandboxConnectionOptions[] {
    return this.creates.map((c) => (c.options.connectionConfig as FakeConnectionConfig).options);
  }

  /** Remotes created and not deleted. */
  get aliveIds(): string[] {
    return [...this.remotes.values()].filter((r) => r.alive).map((r) => r.id);
  }

  /** The seconds of every renewal attempt (on `remoteId`, or any), in order. */
  renewCalls(remoteId?: string): number[] {
    return this.gate
      .calls('renew')
      .filter((c) => remoteId === undefined || c.args[0] === remoteId)
      .map((c) => c.args[1] as number);
  }

  remote(remoteId: string): FakeRemoteState {
    const state = this.remotes.get(remoteId);
    if (state === undefined) throw new Error(`no fake remote ${remoteId}`);
    return state;
  }

  /** The next `times` calls of `op` (on `remoteId`, or any) fail with `error` before running. */
  failNext(
    op: FakeOpenSandboxOp,
    error: unknown,
    options: { remoteId?: string; times?: number } = {},
  ): this {
    this.#failures.push({ op, remoteId: options.remoteId, error, remaining: options.times ?? 1 });
    return this;
  }

  /**
   * Commands matching `match` get `respond`'s execution (or throw its error) instead of running;
   * `undefined` from `respond` lets the command run. Returns a function removing the responder.
   */
  respondTo(
    match: string | RegExp | ((command: string) => boolean),
    respond: Responder,
  ): () => void {
    const test =
      typeof match === 'function'
        ? match
        : typeof match === 'string'
          ? (c: string) => c.includes(match)
          : (c: string) => match.test(c);
    const entry = { match: test, respond };
    this.#responders.push(entry);
    return () => {
      const at = this.#responders.indexOf(entry);
      if (at >= 0) this.#responders.splice(at, 1);
    };
  }

  /** Marks a remote deleted behind the provider's back (expired, killed by an operator). */
  vanish(remoteId: string): void {
    this.remote(remoteId).alive = false;
  }

  async dispose(): Promise<void> {
    await Promise.all([...this.remotes.values()].map((r) => r.machine.dispose()));
  }

  // -------------------------------------------------------------------------------------------

  #call<T>(
    op: FakeOpenSandboxOp,
    remoteId: string | undefined,
    args: readonly unknown[],
    real: () => Promise<T>,
  ): Promise<T> {
    const routed = this.gate.invoke(op, [remoteId, ...args], () => {
      const rule = this.#failures.find(
        (r) => r.op === op && (r.remoteId === undefined || r.remoteId === remoteId),
      );
      if (rule !== undefined) {
        rule.remaining -= 1;
        if (rule.remaining <= 0) this.#failures.splice(this.#failures.indexOf(rule), 1);
        return Promise.reject(rule.error);
      }
      return real().catch((error: unknown) => Promise.reject(apiErrorOf(error)));
    });
    return Promise.resolve(routed);
  }

  async #create(options: OpenSandboxCreateOptions): Promise<OpenSandboxRemote> {
    const id = `fake-${(this.#next += 1)}`;
    const machine = await HostShellMachine.create(options.env ?? {}, this.#userland);
    const now = this.#now();
    const state: FakeRemoteState = {
      id,
      machine,
      options,
      alive: true,
      state: 'Running',
      createdAt: new Date(now),
      expiresAt:
        options.timeoutSeconds === null ? null : new Date(now + options.timeoutSeconds * 1000),
      renewals: [],
      kills: 0,
      closes: 0,
    };
    this.remotes.set(id, state);
    this.creates.push({ remoteId: id, options });
    return this.#remoteFor(state);
  }

  /** `GET /v1/sandboxes`: live sandboxes matching every metadata pair and a state, one page. */
  #list(filter: OpenSandboxListFilter): OpenSandboxListPage {
    const page = filter.page ?? 1;
    const pageSize = filter.pageSize ?? DEFAULT_LIST_PAGE_SIZE;
    const wanted = Object.entries(filter.metadata ?? {});
    const matching = [...this.remotes.values()].filter(
      (r) =>
        r.alive &&
        wanted.every(([k, v]) => r.options.metadata?.[k] === v) &&
        (filter.states === undefined ||
          filter.states.length === 0 ||
          filter.states.includes(r.state)),
    );
    const totalPages = Math.max(1, Math.ceil(matching.length / pageSize));
    const items = matching
      .slice((page - 1) * pageSize, page * pageSize)
      .map((r): OpenSandboxSandboxInfo => ({
        id: r.id,
        image: { uri: r.options.image },
        ...(r.options.metadata === undefined ? {} : { metadata: { ...r.options.metadata } }),
        status: { state: r.state },
        createdAt: r.createdAt,
        expiresAt: r.expiresAt,
      }));
    return {
      items,
      pagination: { page, totalPages, hasNextPage: page < totalPages },
    };
  }

  #remoteFor(state: FakeRemoteState): OpenSandboxRemote {
    const { id, machine } = state;
    const alive = (): void => {
      if (!state.alive) throw sandboxNotFound(id);
    };
    const commands: OpenSandboxCommands = {
      run: (command, options, handlers, signal) =>
        abortable(
          signal,
          this.#call('run', id, [command, options], async () => {
            alive();
            this.runs.push({ remoteId: id, command, options });
            for (const { match, respond } of this.#responders) {
              if (!match(command)) continue;
              const scripted = respond(command, options);
              if (scripted instanceof Error) throw scripted;
              if (scripted !== undefined) return scripted;
            }
            if (signal?.aborted) throw signal.reason;
            const outLines = new ExecdLineSplitter();
            const errLines = new ExecdLineSplitter();
            const result = await machine.run(command, {
              envs: options?.envs ?? {},
              timeoutMs:
                options?.timeoutSeconds === undefined
                  ? 0
                  : Math.round(options.timeoutSeconds * 1000),
              ...(options?.workingDirectory === undefined ? {} : { cwd: options.workingDirectory }),
              ...(signal === undefined ? {} : { signal }),
              // The SDK hands each execd line event to the handlers as it arrives.
              onStdout: (text) => {
                for (const line of outLines.push(text)) void handlers?.onStdout?.({ text: line });
              },
              onStderr: (text) => {
                for (const line of errLines.push(text)) void handlers?.onStderr?.({ text: line });
              },
            });
            for (const line of outLines.flush()) void handlers?.onStdout?.({ text: line });
            for (const line of errLines.flush()) void handlers?.onStderr?.({ text: line });
            if (signal?.aborted) throw signal.reason;
            return executionFromEvents(
              commandEvents(
                result,
                {
                  exitCode: result.exitCode,
                  waitError: result.waitError,
                  elapsedMs: result.elapsedMs,
                },
                `cmd-${id}`,
              ),
            );
          }),
        ),
    };
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const fake = this;
    const files: OpenSandboxFiles = {
      readBytes: (path) =>
        this.#call('readBytes', id, [path], async () => {
          alive();
          return machine.readBytes(path);
        }),
      readBytesStream: (path) =>
        (async function* stream() {
          fake.streams.opened += 1;
          try {
            const bytes = await fake.#call('readBytesStream', id, [path], async () => {
              alive();
              return machine.readBytes(path);
            });
            for (let at = 0; at < bytes.byteLength; at += STREAM_CHUNK_BYTES) {
              yield bytes.subarray(at, at + STREAM_CHUNK_BYTES);
            }
          } finally {
            fake.streams.closed += 1;
          }
        })(),
      writeFiles: (entries: OpenSandboxWriteEntry[]) =>
        this.#call('writeFiles', id, [entries], async () => {
          alive();
          for (const entry of entries) {
            const data =
              typeof entry.data === 'string' ? new TextEncoder().encode(entry.data) : entry.data;
            await machine.writeBytes(entry.path, data, entry.mode);
          }
        }),
    };
    return {
      id,
      commands,
      files,
      renew: (seconds) =>
        this.#call('renew', id, [seconds], async () => {
          alive();
          state.renewals.push(seconds);
          state.expiresAt = new Date(this.#now() + seconds * 1000);
          return { expiresAt: state.expiresAt };
        }),
      kill: () =>
        this.#call('kill', id, [], async () => {
          state.kills += 1;
          alive();
          state.alive = false;
        }),
      close: () =>
        this.#call('close', id, [], async () => {
          state.closes += 1;
        }),
    };
  }
}
