/**
 * One run at a time, shared: a caller that arrives while a run is in flight gets that run's
 * promise instead of starting a second. For passes that must never overlap (a renewal pass, a
 * reconciliation pass) and that more than one trigger may start (a timer, a CLI command, a test).
 */
export class SingleFlight<T> {
  #current: Promise<T> | undefined;

  run(start: () => Promise<T>): Promise<T> {
    this.#current ??= start().finally(() => {
      this.#current = undefined;
    });
    return this.#current;
  }

  /** The run in flight, if any (shutdown waits for it). */
  get current(): Promise<T> | undefined {
    return this.#current;
  }
}
