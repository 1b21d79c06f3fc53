import { AbortedError, sleep, systemClock } from '@sbx/core';
import type { Clock } from '@sbx/core';
import { AioHttpClient } from './aio-http.js';

/** Readiness budget after creating a sandbox. */
export const CREATE_READY_TIMEOUT_MS = 60_000;
/** Readiness budget when adopting a discovered sandbox. */
export const DISCOVER_READY_TIMEOUT_MS = 5_000;

export interface WaitForReadyOptions {
  /** Total budget. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** Timers and deadlines; tests pass a `ManualClock`. Default: the system clock. */
  clock?: Clock;
  /** First pause between attempts; doubles up to `maxDelayMs`. Default 100 ms. */
  initialDelayMs?: number;
  /** Default 1000 ms. */
  maxDelayMs?: number;
  /** Limit of one probe request. Default 5000 ms (never more than the time left). */
  requestTimeoutMs?: number;
  /**
   * Checked after each failed probe; false ends the wait early (e.g. the container exited), so a
   * sandbox that crashed on start does not cost the whole budget.
   */
  stillViable?: () => Promise<boolean>;
  /** Overrides the proxy classification of `url`. */
  trustEnvProxy?: boolean;
  /** Sent with every probe (the image's API key: a probe without it answers 401). */
  headers?: Readonly<Record<string, string>>;
}

/**
 * Polls `GET <url>/v1/sandbox` until it answers 200 (true) or the budget is spent (false). A
 * refused connection, a timeout or any other status counts as "not yet". Pauses start short and
 * back off, always clamped to the time left; an aborted signal rejects with `AbortedError`.
 * Control-plane destinations are reached without environment proxies (`shouldTrustEnvProxy`).
 */
export async function waitForSandboxReady(
  url: string,
  options: WaitForReadyOptions,
): Promise<boolean> {
  const clock = options.clock ?? systemClock;
  const deadline = clock.now() + options.timeoutMs;
  const maxDelay = options.maxDelayMs ?? 1000;
  let delay = options.initialDelayMs ?? 100;
  const http = new AioHttpClient({
    baseUrl: url,
    ...(options.trustEnvProxy === undefined ? {} : { trustEnvProxy: options.trustEnvProxy }),
    ...(options.headers ? { headers: options.headers } : {}),
  });
  try {
    for (;;) {
      if (options.signal?.aborted) {
        throw new AbortedError('Waiting for the sandbox was aborted', {
          cause: options.signal.reason,
        });
      }
      let remaining = deadline - clock.now();
      if (remaining <= 0) return false;
      try {
        const status = await http.probe('/v1/sandbox', {
          signal: options.signal,
          timeoutMs: Math.max(1, Math.min(options.requestTimeoutMs ?? 5000, remaining)),
        });
        if (status === 200) return true;
      } catch (err) {
        if (err instanceof AbortedError) throw err;
      }
      if (options.stillViable && !(await options.stillViable())) return false;
      remaining = deadline - clock.now();
      if (remaining <= 0) return false;
      await sleep(Math.min(delay, remaining), {
        clock,
        signal: options.signal,
        abortMessage: 'Waiting for the sandbox was aborted',
      });
      delay = Math.min(delay * 2, maxDelay);
    }
  } finally {
    await http.close();
  }
}
