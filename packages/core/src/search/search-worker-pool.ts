import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { AbortedError, SandboxRuntimeError, SearchTimeoutError } from '../errors/errors.js';
import { DEFAULT_SEARCH_TIMEOUT_MS } from './search-limits.js';

/** A regular expression as it crosses to the worker. */
export interface RegexSpec {
  source: string;
  flags: string;
}

/** Grep one batch of local files: per file, `[lineNumber, line]` of at most `wanted` hits. */
export interface ScanFilesTask {
  kind: 'scan-files';
  files: readonly string[];
  regex: RegexSpec;
  /** A literal every match contains, as a regex; files without it are skipped unsplit. */
  literal?: RegexSpec | undefined;
  /** The literal is ASCII: the worker may test it on the raw bytes (Latin-1 view). */
  literalAscii?: boolean;
  wanted: number;
  /** Canonical search root: an opened file whose real path is elsewhere is skipped (Linux). */
  root?: string;
  maxFileSize: number;
  maxLineLength: number;
  sniffBytes: number;
}

/** Re-check lines a remote sandbox returned: the indices of those that match. */
export interface TestLinesTask {
  kind: 'test-lines';
  lines: readonly string[];
  regex: RegexSpec;
  maxLineLength: number;
}

/** The ignore list as the worker applies it (see `ignoreMatcherSpec`). */
export interface IgnoreSpec {
  names: string[];
  source: string;
  flags: string;
  fold: boolean;
}

export interface WalkStartTask {
  kind: 'walk-start';
  walkId: number;
  /** Canonical root directory. */
  root: string;
  ignore: IgnoreSpec;
}

export interface WalkNextTask {
  kind: 'walk-next';
  walkId: number;
  max: number;
}

export interface WalkEndTask {
  kind: 'walk-end';
  walkId: number;
}

export interface WalkChunk {
  /** Relative paths, in walk order. */
  paths: string[];
  /** 1 where `paths[i]` is a directory. */
  dirs: Uint8Array;
  /** Directories that could not be listed: `[realPath, errno code]`. */
  skipped: [string, string][];
  done: boolean;
}

type SearchTask = ScanFilesTask | TestLinesTask | WalkStartTask | WalkNextTask | WalkEndTask;

/** Per file: its hits, or the error code of a file that could not be read. */
export type FileScanResult = [number, string][] | string;

/** A scan's files with hits or errors, as `[index in the task's files, result]`, in order. */
export type FileScanResults = [number, FileScanResult][];

type TaskResult<T> = T extends ScanFilesTask
  ? FileScanResults
  : T extends TestLinesTask
    ? number[]
    : T extends WalkStartTask
      ? { error: string | null }
      : T extends WalkNextTask
        ? WalkChunk
        : null;

interface Pending {
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
  /** File scans: the results that arrived (files with hits or errors), in file order. */
  progress?: FileScanResults;
  onProgress?: ((index: number, result: FileScanResult) => void) | undefined;
}

/** Memory a search worker may use before V8 ends it (a hostile pattern cannot OOM the gateway). */
const WORKER_HEAP_MB = 256;

const workerUrl = new URL('./search-worker.cjs', import.meta.url);

interface WorkerMessage {
  id: number;
  ok?: boolean;
  progress?: number;
  value?: unknown;
  message?: string;
}

/** One worker thread and the tasks it has been sent. */
class SearchWorker {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  dead = false;

  constructor() {
    this.worker = new Worker(workerUrl, {
      // The host's own flags (loaders, --input-type, inspector) are not the worker's business and
      // some are refused for a file-based worker.
      execArgv: [],
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
    });
    this.worker.on('message', (message: WorkerMessage) => {
      const call = this.pending.get(message.id);
      if (!call) return;
      if (message.progress !== undefined) {
        const result = message.value as FileScanResult;
        call.progress?.push([message.progress, result]);
        call.onProgress?.(message.progress, result);
        return;
      }
      this.pending.delete(message.id);
      if (message.ok) call.resolve(call.progress ?? message.value);
      else call.reject(new SandboxRuntimeError(`search failed: ${message.message ?? 'unknown'}`));
    });
    this.worker.on('error', (err) => this.fail(err));
    this.worker.on('exit', (code) => {
      this.fail(new SandboxRuntimeError(`search worker exited (code ${code})`));
    });
  }

  run<T extends SearchTask>(
    task: T,
    onProgress?: (index: number, result: FileScanResult) => void,
  ): Promise<TaskResult<T>> {
    if (this.dead) return Promise.reject(new SandboxRuntimeError('search worker is gone'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, {
        resolve: resolve as (value: unknown) => void,
        reject,
        ...(task.kind === 'scan-files' ? { progress: [], onProgress } : {}),
      });
      this.worker.postMessage({ id, task });
    });
  }

  /** Idle workers must not keep the process alive; busy ones must. */
  setBusy(busy: boolean): void {
    if (busy) this.worker.ref();
    else this.worker.unref();
  }

  kill(reason: Error): void {
    this.fail(reason);
    void this.worker.terminate();
  }

  private fail(reason: unknown): void {
    this.dead = true;
    for (const call of this.pending.values()) call.reject(reason);
    this.pending.clear();
  }
}

export interface SearchWorkerPoolOptions {
  /** Workers running at once; further searches wait. Default: the core count, at least 2. */
  maxWorkers?: number;
  /** Workers kept alive between searches. Default 2. */
  maxIdle?: number;
}

/** What a search body gets: one worker, held for the whole search. */
export interface SearchWorkerHandle {
  /**
   * Runs a task on one of the search's workers (round robin). `onProgress` receives each file of
   * a scan that has hits or an error as it is done (in order), before the result.
   */
  run<T extends SearchTask>(
    task: T,
    onProgress?: (index: number, result: FileScanResult) => void,
  ): Promise<TaskResult<T>>;
  /** Aborted when the search is stopped (deadline or caller abort): the body's own I/O stops too. */
  signal: AbortSignal;
  /** Runs a task on the search's first worker: walks keep their state there. */
  runPinned<T extends SearchTask>(task: T): Promise<TaskResult<T>>;
}

export interface SearchDeadline {
  /** Wall clock of the whole search, queueing for a worker included. */
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  /** The error to throw at the deadline (it may carry the results found so far). */
  onTimeout: () => Error;
}

/**
 * Worker threads for content search. A search holds one worker for its whole run and is bounded
 * by its deadline: when the deadline (or the caller's abort) comes first, the worker is
 * terminated — the only way to stop a regex mid-match — and replaced lazily, and the search
 * rejects with `onTimeout()` (or `AbortedError`). The event loop only posts messages and awaits
 * answers, so no pattern can stall it.
 */
export class SearchWorkerPool {
  private readonly maxWorkers: number;
  private readonly maxIdle: number;
  private readonly idle: SearchWorker[] = [];
  private readonly waiting: ((worker: SearchWorker) => void)[] = [];
  private running = 0;

  constructor(options: SearchWorkerPoolOptions = {}) {
    this.maxWorkers = options.maxWorkers ?? Math.max(2, availableParallelism());
    this.maxIdle = options.maxIdle ?? 2;
  }

  async withWorker<T>(
    deadline: SearchDeadline,
    body: (worker: SearchWorkerHandle) => Promise<T>,
    options: { parallel?: number } = {},
  ): Promise<T> {
    const { signal } = deadline;
    if (signal?.aborted) throw new AbortedError('search aborted');
    const workers: SearchWorker[] = [];
    let settle: ((error: Error) => void) | undefined;
    const stopped = new Promise<never>((_, reject) => {
      settle = reject;
    });
    // The body's own rejection after a stop is expected (its workers were killed): observe it.
    stopped.catch(() => undefined);
    const stopping = new AbortController();
    const stop = (error: Error) => {
      stopping.abort(error);
      for (const worker of workers) worker.kill(error);
      settle?.(error);
    };
    const timer = setTimeout(() => stop(deadline.onTimeout()), deadline.timeoutMs);
    const onAbort = () => stop(new AbortedError('search aborted'));
    signal?.addEventListener('abort', onAbort, { once: true });
    const acquired = this.acquire();
    let owed = true;
    try {
      workers.push(await Promise.race([acquired, stopped]));
      owed = false;
      // More workers only if free right now: a busy pool serves more searches, not wider ones.
      for (let i = 1; i < (options.parallel ?? 1); i++) {
        const extra = this.tryAcquire();
        if (!extra) break;
        workers.push(extra);
      }
      // Scans start on the second worker: the first also runs the walk.
      let turn = 1;
      const handle: SearchWorkerHandle = {
        run: (task, onProgress) => {
          const worker = workers[turn++ % workers.length] as SearchWorker;
          return worker.run(task, onProgress);
        },
        runPinned: (task) => (workers[0] as SearchWorker).run(task),
        signal: stopping.signal,
      };
      return await Promise.race([body(handle), stopped]);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      for (const worker of workers) this.release(worker);
      // Stopped while queued: the worker we are still owed goes straight back.
      if (owed) void acquired.then((w) => this.release(w));
    }
  }

  /** A worker if one is idle or may be started now, else undefined (never waits). */
  private tryAcquire(): SearchWorker | undefined {
    let worker = this.idle.pop();
    while (worker?.dead) worker = this.idle.pop();
    if (worker) {
      this.running++;
      worker.setBusy(true);
      return worker;
    }
    if (this.running < this.maxWorkers && this.waiting.length === 0) {
      this.running++;
      return new SearchWorker();
    }
    return undefined;
  }

  private acquire(): Promise<SearchWorker> {
    let worker = this.idle.pop();
    while (worker?.dead) worker = this.idle.pop();
    if (worker) {
      this.running++;
      worker.setBusy(true);
      return Promise.resolve(worker);
    }
    if (this.running < this.maxWorkers) {
      this.running++;
      return Promise.resolve(new SearchWorker());
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(worker: SearchWorker): void {
    const next = this.waiting.shift();
    if (next) {
      // The slot passes on; a killed worker is replaced by a fresh one.
      next(worker.dead ? new SearchWorker() : worker);
      return;
    }
    this.running--;
    if (worker.dead) return;
    if (this.idle.length < this.maxIdle) {
      worker.setBusy(false);
      this.idle.push(worker);
    } else {
      worker.kill(new SandboxRuntimeError('search worker retired'));
    }
  }
}

let sharedPool: SearchWorkerPool | undefined;

/** The process-wide pool every local and remote search shares. */
export function searchWorkerPool(): SearchWorkerPool {
  sharedPool ??= new SearchWorkerPool();
  return sharedPool;
}

export interface LineTestOptions {
  /** Default 10 s. */
  timeoutMs?: number;
  signal?: AbortSignal | undefined;
  pool?: SearchWorkerPool;
}

/**
 * Indices of the `lines` that `regex` matches, tested on a search worker under a deadline: the
 * remote providers' re-check of what a sandbox's own grep returned, which a hostile pattern could
 * otherwise turn into a stall of the gateway. Lines over 2,000 code points (counting the line
 * break) never match. Past the deadline: `SearchTimeoutError`.
 */
export async function matchingLineIndices(
  lines: readonly string[],
  regex: RegExp,
  maxLineLength: number,
  options: LineTestOptions = {},
): Promise<number[]> {
  if (lines.length === 0) return [];
  const timeoutMs = options.timeoutMs ?? DEFAULT_SEARCH_TIMEOUT_MS;
  const pool = options.pool ?? searchWorkerPool();
  return pool.withWorker(
    {
      timeoutMs,
      signal: options.signal,
      onTimeout: () => new SearchTimeoutError('grep', timeoutMs),
    },
    (worker) =>
      worker.run({
        kind: 'test-lines',
        lines,
        regex: { source: regex.source, flags: regex.flags },
        maxLineLength,
      }),
  );
}
