/**
 * Deterministic interleavings without sleeps: a `CallGate` holds chosen calls at a chosen point
 * until the test lets each one go, so a race test can say "the release is inside the provider
 * call right now" and then act.
 */

/** Where a paused call is held: before the real method runs, or after it settled. */
export type PausePhase = 'before' | 'after';

export interface PauseOptions {
  /** Default `'before'`: the real method has not been invoked while the call is held. */
  phase?: PausePhase;
  /** Hold only the next `times` calls, then pass calls through again. Default: until `resume`. */
  times?: number;
}

export interface GateCallRecord {
  readonly method: string;
  readonly args: readonly unknown[];
}

/** One held call. */
export interface PausedCall {
  readonly method: string;
  readonly args: readonly unknown[];
  readonly phase: PausePhase;
  /** For `'after'` calls: how the real method ended. */
  readonly outcome: PromiseSettledResult<unknown> | undefined;
  /** True once `release` or `fail` was called. */
  readonly done: boolean;
  /**
   * Lets the call continue (before: runs the real method now; after: hands its outcome to the
   * caller). Resolves with the outcome once it is known; never rejects. Repeated calls return the
   * same promise.
   */
  release(): Promise<PromiseSettledResult<unknown>>;
  /** Ends the call with `error` instead (before: the real method never runs). */
  fail(error: unknown): void;
}

interface PauseRule {
  phase: PausePhase;
  remaining: number;
}

function settledOf<T>(promise: Promise<T>): Promise<PromiseSettledResult<T>> {
  return promise.then(
    (value) => ({ status: 'fulfilled', value }) as const,
    (reason: unknown) => ({ status: 'rejected', reason }) as const,
  );
}

class HeldCall implements PausedCall {
  readonly method: string;
  readonly args: readonly unknown[];
  readonly phase: PausePhase;
  outcome: PromiseSettledResult<unknown> | undefined;
  #done = false;
  #released: Promise<PromiseSettledResult<unknown>> | undefined;
  readonly #run: () => Promise<unknown>;
  readonly #resolve: (value: unknown) => void;
  readonly #reject: (reason: unknown) => void;

  constructor(
    init: { method: string; args: readonly unknown[]; phase: PausePhase },
    run: () => Promise<unknown>,
    resolve: (value: unknown) => void,
    reject: (reason: unknown) => void,
    outcome?: PromiseSettledResult<unknown>,
  ) {
    this.method = init.method;
    this.args = init.args;
    this.phase = init.phase;
    this.#run = run;
    this.#resolve = resolve;
    this.#reject = reject;
    this.outcome = outcome;
  }

  get done(): boolean {
    return this.#done;
  }

  release(): Promise<PromiseSettledResult<unknown>> {
    if (this.#released) return this.#released;
    if (this.#done)
      return Promise.resolve({ status: 'rejected', reason: new Error('call was failed') });
    this.#done = true;
    let result: Promise<unknown>;
    if (this.phase === 'after' && this.outcome) {
      const o = this.outcome;
      result = o.status === 'fulfilled' ? Promise.resolve(o.value) : Promise.reject(o.reason);
    } else {
      result = this.#run();
    }
    result.then(this.#resolve, this.#reject);
    this.#released = settledOf(result).then((o) => (this.outcome = o));
    return this.#released;
  }

  fail(error: unknown): void {
    if (this.#done) return;
    this.#done = true;
    this.outcome = { status: 'rejected', reason: error };
    this.#reject(error);
  }
}

/** Method names of `T` (own or inherited members whose value is a function). */
export type MethodName<T> = {
  [K in keyof T]-?: T[K] extends (...args: never[]) => unknown ? K : never;
}[keyof T] &
  string;

/**
 * Routes calls through pause rules. Unpaused calls pass straight through (a synchronous method
 * stays synchronous); a paused call always returns a promise, so pause only async methods.
 */
export class CallGate<M extends string = string> {
  readonly #rules = new Map<string, PauseRule>();
  readonly #held = new Map<string, HeldCall[]>();
  readonly #claimers = new Map<string, ((call: PausedCall) => void)[]>();
  readonly #history: GateCallRecord[] = [];

  /** Holds subsequent calls of `method` (all of them, or the next `times`). */
  pause(method: M, options: PauseOptions = {}): this {
    const times = options.times ?? Number.POSITIVE_INFINITY;
    if (!(times > 0)) throw new RangeError(`pause(${method}): times must be positive`);
    this.#rules.set(method, { phase: options.phase ?? 'before', remaining: times });
    return this;
  }

  /** Stops holding new calls of `method` (or of every method). Held calls stay held. */
  resume(method?: M): this {
    if (method === undefined) this.#rules.clear();
    else this.#rules.delete(method);
    return this;
  }

  /** Whether new calls of `method` are currently held. */
  isPaused(method: M): boolean {
    return this.#rules.has(method);
  }

  /**
   * The next held call of `method` that no earlier `nextCall` claimed: resolves at once if one is
   * waiting, otherwise when the next one arrives. Claims are handed out in arrival order.
   */
  nextCall(method: M): Promise<PausedCall> {
    const waiting = this.#held.get(method);
    const call = waiting?.shift();
    if (call) return Promise.resolve(call);
    return new Promise<PausedCall>((resolve) => {
      const list = this.#claimers.get(method) ?? [];
      list.push(resolve);
      this.#claimers.set(method, list);
    });
  }

  /** Held calls of `method` not yet claimed by `nextCall`. */
  waiting(method: M): number {
    return this.#held.get(method)?.length ?? 0;
  }

  /** Releases every held, unclaimed call (of `method`, or of all methods) and stops pausing. */
  async releaseAll(method?: M): Promise<void> {
    this.resume(method);
    const lists = method === undefined ? [...this.#held.values()] : [this.#held.get(method) ?? []];
    const calls = lists.flatMap((l) => l.splice(0));
    await Promise.all(calls.map((c) => c.release()));
  }

  /** Every call routed through the gate, in call order. */
  calls(method?: M): readonly GateCallRecord[] {
    return method === undefined
      ? [...this.#history]
      : this.#history.filter((c) => c.method === method);
  }

  /** Number of calls of `method` routed through the gate. */
  count(method: M): number {
    return this.calls(method).length;
  }

  /** Routes one call. `real` performs the actual work. */
  invoke<R>(method: M, args: readonly unknown[], real: () => R): R | Promise<Awaited<R>> {
    this.#history.push({ method, args });
    const rule = this.#rules.get(method);
    if (rule === undefined) return real();
    rule.remaining -= 1;
    if (rule.remaining <= 0) this.#rules.delete(method);
    const run = (): Promise<unknown> => {
      try {
        return Promise.resolve(real());
      } catch (error) {
        return Promise.reject(error);
      }
    };
    return new Promise<Awaited<R>>((resolve, reject) => {
      const settle = resolve as (value: unknown) => void;
      if (rule.phase === 'before') {
        this.#offer(new HeldCall({ method, args, phase: 'before' }, run, settle, reject));
        return;
      }
      void settledOf(run()).then((outcome) => {
        this.#offer(new HeldCall({ method, args, phase: 'after' }, run, settle, reject, outcome));
      });
    });
  }

  #offer(call: HeldCall): void {
    const claimer = this.#claimers.get(call.method)?.shift();
    if (claimer) {
      claimer(call);
      return;
    }
    const list = this.#held.get(call.method) ?? [];
    list.push(call);
    this.#held.set(call.method, list);
  }
}

/** A `CallGate` over an existing object, plus the wrapped object to hand to the code under test. */
export class Pausable<T extends object> extends CallGate<MethodName<T>> {
  /** Use this in place of the original; the original's methods still run with `this` = original. */
  readonly proxy: T;

  constructor(target: T) {
    super();
    const wrappers = new Map<PropertyKey, { fn: unknown; wrapper: unknown }>();
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const gate = this;
    this.proxy = new Proxy(target, {
      get(obj, prop) {
        const value: unknown = Reflect.get(obj, prop, obj);
        if (typeof value !== 'function' || typeof prop !== 'string') return value;
        // One stable wrapper per method (identity checks keep working) unless the method is
        // replaced on the target, in which case the new function is wrapped.
        const cached = wrappers.get(prop);
        if (cached !== undefined && cached.fn === value) return cached.wrapper;
        const fn = value as (...args: unknown[]) => unknown;
        const wrapper = (...args: unknown[]): unknown =>
          gate.invoke(prop as MethodName<T>, args, () => fn.apply(obj, args));
        wrappers.set(prop, { fn: value, wrapper });
        return wrapper;
      },
    });
  }
}

/**
 * Wraps `target` so its method calls can be held and let go one by one:
 *
 * ```ts
 * const store = pausable(realStore);
 * store.pause('take');
 * const pending = codeUnderTest(store.proxy);   // reaches store.take(...) and stops there
 * const call = await store.nextCall('take');
 * // ... act while take() is in flight ...
 * await call.release();                         // take() runs now; its outcome is returned
 * ```
 */
export function pausable<T extends object>(target: T): Pausable<T> {
  return new Pausable(target);
}
