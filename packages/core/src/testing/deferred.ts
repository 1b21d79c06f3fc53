/**
 * A promise whose outcome the test decides. Race tests use it to hold a fake's call open at an
 * exact point and to observe that something has *not* happened yet (`settled` stays false).
 */
export class Deferred<T = void> {
  readonly promise: Promise<T>;
  #settled = false;
  #resolve!: (value: T | PromiseLike<T>) => void;
  #reject!: (reason: unknown) => void;

  constructor() {
    this.promise = new Promise<T>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  /** True once `resolve` or `reject` was called (the first call wins; later ones are ignored). */
  get settled(): boolean {
    return this.#settled;
  }

  resolve(value: T | PromiseLike<T>): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#resolve(value);
  }

  reject(reason: unknown): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#reject(reason);
  }
}

/** `new Deferred<T>()`, spelled as a factory. */
export function controllable<T = void>(): Deferred<T> {
  return new Deferred<T>();
}

/**
 * Lets every already-queued promise continuation and I/O callback run: resolves on a later
 * macrotask turn. Use it to assert that something is still *blocked* after everything runnable ran
 * (not as a sleep: it waits for no wall-clock time).
 */
export async function settle(turns = 3): Promise<void> {
  for (let i = 0; i < turns; i += 1) {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** Observes a promise's state without awaiting it. */
export function track<T>(promise: Promise<T>): {
  readonly settled: boolean;
  readonly status: 'pending' | 'fulfilled' | 'rejected';
  readonly value: T | undefined;
  readonly reason: unknown;
  readonly promise: Promise<T>;
} {
  const state: {
    status: 'pending' | 'fulfilled' | 'rejected';
    value: T | undefined;
    reason: unknown;
  } = { status: 'pending', value: undefined, reason: undefined };
  promise.then(
    (value) => {
      state.status = 'fulfilled';
      state.value = value;
    },
    (reason: unknown) => {
      state.status = 'rejected';
      state.reason = reason;
    },
  );
  return {
    get settled() {
      return state.status !== 'pending';
    },
    get status() {
      return state.status;
    },
    get value() {
      return state.value;
    },
    get reason() {
      return state.reason;
    },
    promise,
  };
}
