import type { Clock } from '@sbx/core';
import { COMMAND_TTL_GRACE_SECONDS } from './opensandbox-config.js';

export interface RemoteLifetimeOptions {
  /** Seconds the remote lives past the latest operation; `null` = explicit-cleanup mode. */
  readonly lifetimeSeconds: number | null;
  /** Asks the server to let the remote live `seconds` from now (the SDK's `renew`). */
  readonly renew: (seconds: number) => Promise<unknown>;
  /** Throws when the adapter is closed; checked before each renewal reaches the server. */
  readonly assertOpen: () => void;
  /** The error to throw for a failed renewal (a terminal one also evicts the adapter). */
  readonly failure: (error: unknown) => Error;
  readonly clock: Clock;
}

const noop = (): void => {};

/**
 * The expiry of one OpenSandbox remote, as its adapter has renewed it.
 *
 * Renewal sets an absolute expiry on the server, so a renewal never asks for less than what is
 * already granted: a short file operation renewing with the plain lifetime while a long command
 * runs would otherwise move the expiry back in front of the command's end and get the sandbox
 * reaped under it. Renewals reach the server one after another, so it applies them in the order
 * they were computed. In explicit-cleanup mode (no lifetime) nothing is ever renewed.
 */
export class RemoteLifetime {
  readonly #options: RemoteLifetimeOptions;
  /** Expiry granted so far, in clock milliseconds (meaningless in explicit-cleanup mode). */
  #expiresAt: number;
  #tail: Promise<void> = Promise.resolve();

  /** The remote was created with this lifetime just now. */
  constructor(options: RemoteLifetimeOptions) {
    this.#options = options;
    this.#expiresAt = options.clock.now() + (options.lifetimeSeconds ?? 0) * 1000;
  }

  /** `null` in explicit-cleanup mode. */
  get seconds(): number | null {
    return this.#options.lifetimeSeconds;
  }

  /** The expiry granted so far (clock milliseconds); `undefined` in explicit-cleanup mode. */
  get expiresAt(): number | undefined {
    return this.#options.lifetimeSeconds === null ? undefined : this.#expiresAt;
  }

  /** Another lifetime from now: before a file operation, or when a sandbox is handed out again. */
  renew(): Promise<void> {
    return this.#renew(this.#options.lifetimeSeconds ?? 0);
  }

  /**
   * Before a command of `timeoutSeconds`: its limit plus `COMMAND_TTL_GRACE_SECONDS` when that is
   * longer than the lifetime, so the remote outlives the command sbx still waits for.
   */
  renewForCommand(timeoutSeconds: number): Promise<void> {
    return this.#renew(
      Math.max(this.#options.lifetimeSeconds ?? 0, timeoutSeconds + COMMAND_TTL_GRACE_SECONDS),
    );
  }

  /** Asks for `horizonSeconds` from now, or for what is left of the current grant when longer. */
  #renew(horizonSeconds: number): Promise<void> {
    if (this.#options.lifetimeSeconds === null) return Promise.resolve();
    const { assertOpen, clock, renew, failure } = this.#options;
    const step = async (): Promise<void> => {
      assertOpen();
      const now = clock.now();
      const remaining = Math.ceil(Math.max(0, this.#expiresAt - now) / 1000);
      const seconds = Math.max(horizonSeconds, remaining);
      try {
        await renew(seconds);
      } catch (error) {
        throw failure(error);
      }
      this.#expiresAt = Math.max(this.#expiresAt, now + seconds * 1000);
    };
    const run = this.#tail.then(step);
    this.#tail = run.then(noop, noop);
    return run;
  }
}
