import type { CliOutput } from './cli-io.js';

/** Reports a long operation: a spinner on a terminal, nothing at all otherwise. */
export interface Progress {
  /** Shows `label` until the next `update` or `stop`. */
  update(label: string): void;
  /** Removes the indicator; idempotent. */
  stop(): void;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const FRAME_MS = 80;

const silent: Progress = { update: () => {}, stop: () => {} };

/**
 * Progress goes to stderr so stdout stays exactly the command's result. Off a terminal (pipes, CI
 * logs, `--json`) it is silent: redrawn lines would only litter logs that are read line by line.
 */
export function createProgress(stream: CliOutput, enabled = true): Progress {
  if (!enabled || stream.isTTY !== true) return silent;
  let label = '';
  let frame = 0;
  let timer: ReturnType<typeof setInterval> | undefined;
  const draw = (): void => {
    stream.write(`\r\x1b[K${FRAMES[frame % FRAMES.length] ?? ''} ${label}`);
    frame += 1;
  };
  return {
    update(next: string): void {
      label = next;
      draw();
      if (!timer) {
        timer = setInterval(draw, FRAME_MS);
        // A forgotten spinner must never keep the process alive.
        timer.unref();
      }
    },
    stop(): void {
      if (!timer) return;
      clearInterval(timer);
      timer = undefined;
      stream.write('\r\x1b[K');
    },
  };
}

/** Runs `fn` with `label` shown, and removes the indicator however `fn` ends. */
export async function withProgress<T>(
  progress: Progress,
  label: string,
  fn: () => Promise<T>,
): Promise<T> {
  progress.update(label);
  try {
    return await fn();
  } finally {
    progress.stop();
  }
}
