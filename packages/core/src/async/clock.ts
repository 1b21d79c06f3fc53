/**
 * Time as a dependency. Components that reap or expire things (the warm pool's idle checker, lease
 * renewal) take a `Clock` so tests drive time with `ManualClock` from `@sbx/core/testing` instead of
 * sleeping, and so a background timer never keeps the process alive.
 */

/** An opaque timer handle; only the clock that created it may clear it. */
export interface ClockTimer {
  readonly __clockTimer?: never;
}

export interface ClockTimeoutOptions {
  /**
   * Keep the process alive while the timer is pending. Default false: background housekeeping must
   * never be the reason a host process cannot exit.
   */
  ref?: boolean;
}

export interface Clock {
  /** Milliseconds since the epoch (or since the clock's own origin for a manual clock). */
  now(): number;
  /**
   * Calls `callback` once after `ms`. A returned promise is not awaited by the system clock; a manual
   * clock awaits it so a test's `advance()` returns only after the callback's work has settled.
   * The callback must handle its own errors.
   */
  setTimeout(
    callback: () => void | Promise<void>,
    ms: number,
    options?: ClockTimeoutOptions,
  ): ClockTimer;
  clearTimeout(timer: ClockTimer): void;
}

interface SystemTimer extends ClockTimer {
  readonly handle: ReturnType<typeof setTimeout>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(callback, ms, options = {}) {
    // The callback owns its errors: a rejection it lets escape is a bug and surfaces as an
    // unhandled rejection rather than being hidden here.
    const handle = setTimeout(() => void callback(), ms);
    if (!options.ref) handle.unref();
    const timer: SystemTimer = { handle };
    return timer;
  },
  clearTimeout(timer) {
    const handle = (timer as Partial<SystemTimer>).handle;
    if (handle !== undefined) clearTimeout(handle);
  },
};
