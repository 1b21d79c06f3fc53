/**
 * The pluggable logger of sbx. Libraries are silent by default (`silentLogger`); hosts pass their own
 * implementation (or `consoleLogger()`) where they want to see what sbx does.
 */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

const noop = (): void => {};

export const silentLogger: Logger = { debug: noop, info: noop, warn: noop, error: noop };

export function consoleLogger(): Logger {
  const emit =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (msg: string, fields?: Record<string, unknown>): void => {
      if (fields && Object.keys(fields).length > 0) console[level](msg, fields);
      else console[level](msg);
    };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}
