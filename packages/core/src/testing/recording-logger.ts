import type { Logger } from '../logging/logger.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface LogLine {
  readonly level: LogLevel;
  readonly msg: string;
  /** Present only when the caller passed fields. */
  readonly fields?: Record<string, unknown>;
}

/** A `Logger` that keeps every line, for asserting on the warnings and errors a component logs. */
export interface RecordingLogger extends Logger {
  readonly lines: LogLine[];
  /** The lines (of one level, if given) as `<msg> <fields as JSON>`, one a line, for substring checks. */
  text(level?: LogLevel): string;
}

export function recordingLogger(): RecordingLogger {
  const lines: LogLine[] = [];
  const at =
    (level: LogLevel) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      lines.push({ level, msg, ...(fields ? { fields } : {}) });
    };
  return {
    lines,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    text: (level) =>
      lines
        .filter((l) => level === undefined || l.level === level)
        .map((l) => `${l.msg} ${JSON.stringify(l.fields ?? {})}`)
        .join('\n'),
  };
}
