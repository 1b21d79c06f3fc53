import type { Clock, ClockTimer } from '../async/clock.js';
import { systemClock } from '../async/clock.js';
import { InvalidArgumentError } from '../errors/errors.js';
import { errorMessage } from '../errors/error-inspection.js';
import type { Logger } from '../logging/logger.js';
import { silentLogger } from '../logging/logger.js';

export interface PeriodicTaskOptions {
  /** Names the task in log lines ("lease renewal", "reconciliation"). */
  readonly name: string;
  /** Pause between the end of one pass and the start of the next. */
  readonly intervalMs: number;
  /** One pass. A rejection is logged and the schedule goes on. */
  readonly run: () => Promise<unknown>;
  readonly clock?: Clock | undefined;
  readonly logger?: Logger | undefined;
}

/**
 * One background job on a clock: renewal, reconciliation, a health sweep. Every provider had its
 * own `setTimeout` chain; they differed in whether a stopped provider could reschedule itself
 * from a callback already running, which is how a detached provider kept stopping containers.
 *
 * Invariants:
 * - passes never overlap: `runNow()` during a pass joins it instead of starting a second one;
 * - the next pass is scheduled after a pass ends (never a fixed rate, so a slow store cannot
 *   pile passes up), and only while the task is started;
 * - after `stop()` no pass starts again, including from a timer that fired before the stop and a
 *   pass that ends after it; `stop()` resolves once the pass in flight (if any) has settled.
 */
export class PeriodicTask {
  readonly name: string;
  readonly #intervalMs: number;
  readonly #run: () => Promise<unknown>;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #timer: ClockTimer | undefined;
  #started = false;
  #stopped = false;
  #pass: Promise<void> | undefined;

  constructor(options: PeriodicTaskOptions) {
    if (!(options.intervalMs > 0) || !Number.isFinite(options.intervalMs)) {
      throw new InvalidArgumentError(
        `PeriodicTask ${options.name}: intervalMs must be a finite number > 0, got ${options.intervalMs}`,
      );
    }
    this.name = options.name;
    this.#intervalMs = options.intervalMs;
    this.#run = options.run;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
  }

  /** Whether a next pass is scheduled or running as part of the schedule. */
  get running(): boolean {
    return this.#started && !this.#stopped;
  }

  /**
   * Starts the schedule (first pass after one interval; `runNow()` for one at once). Idempotent;
   * after `stop()` it schedules nothing (`#schedule` checks).
   */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#schedule();
  }

  /**
   * One pass now, or the one in flight. Resolves when it ends; never rejects (failures are
   * logged). After `stop()` it does nothing.
   */
  runNow(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    this.#pass ??= this.#runOnce().finally(() => {
      this.#pass = undefined;
    });
    return this.#pass;
  }

  /** Stops for good: clears the timer and waits for a pass in flight. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#pass;
  }

  async #runOnce(): Promise<void> {
    try {
      await this.#run();
    } catch (err) {
      this.#logger.error(`${this.name} pass failed`, { error: errorMessage(err) });
    }
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = this.#clock.setTimeout(async () => {
      this.#timer = undefined;
      if (this.#stopped) return;
      await this.runNow();
      this.#schedule();
    }, this.#intervalMs);
  }
}
