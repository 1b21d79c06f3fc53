import { AbortedError } from '@sbx/core';
import type { Mutex } from 'async-mutex';

function abortedError(signal: AbortSignal): AbortedError {
  return new AbortedError('The operation was aborted while waiting for the sandbox', {
    cause: signal.reason,
  });
}

/**
 * Runs `fn` holding `mutex`. A caller whose signal fires while it is still queued stops waiting at
 * once; the lock it would have obtained is handed on untouched (released as soon as it arrives),
 * so one abandoned waiter never stalls the queue behind it.
 */
export async function withLock<T>(
  mutex: Mutex,
  signal: AbortSignal | undefined,
  fn: () => Promise<T>,
): Promise<T> {
  if (signal?.aborted) throw abortedError(signal);
  const acquiring = mutex.acquire();
  let release: () => void;
  if (signal) {
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(abortedError(signal));
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      release = await Promise.race([acquiring, aborted]);
    } catch (err) {
      void acquiring.then((r) => r());
      throw err;
    } finally {
      if (onAbort) signal.removeEventListener('abort', onAbort);
    }
  } else {
    release = await acquiring;
  }
  try {
    return await fn();
  } finally {
    release();
  }
}
