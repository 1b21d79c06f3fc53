import type { Logger } from '../logging/logger.js';

/**
 * One log method of a pino logger, in the two call shapes sbx needs. pino takes the fields object
 * first and the message second (`logger.info({ sandboxId }, 'acquired')`), the reverse of sbx's
 * `Logger`, so a pino instance cannot be passed where a `Logger` is expected as it is.
 */
export interface PinoLogFn {
  (fields: Record<string, unknown>, msg?: string): void;
  (msg: string): void;
}

/** The part of a pino logger (`pino()`, or a child of one) that `fromPino` calls. */
export interface PinoLike {
  debug: PinoLogFn;
  info: PinoLogFn;
  warn: PinoLogFn;
  error: PinoLogFn;
}

/**
 * sbx logs a failure as `{ error: err }`. pino serializes an Error (message, type, stack) only under
 * its `err` key; under any other key it becomes `{}`, because an Error's properties are not
 * enumerable. So an Error under `error` moves to `err` unless the caller set `err` itself.
 */
function pinoFields(fields: Record<string, unknown>): Record<string, unknown> {
  const { error, ...rest } = fields;
  if (error instanceof Error && !('err' in fields)) return { ...rest, err: error };
  return fields;
}

/**
 * Adapts a pino logger to sbx's `Logger`. The level filtering, serializers, redaction and transport
 * stay pino's; sbx only passes `(fields, msg)` in pino's order.
 *
 * ```ts
 * import pino from 'pino';
 * const logger = fromPino(pino({ level: 'debug' }).child({ component: 'sbx' }));
 * ```
 */
export function fromPino(pino: PinoLike): Logger {
  const method =
    (level: keyof PinoLike) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      // Called as a method: pino's log functions read their logger from `this`.
      if (fields && Object.keys(fields).length > 0) pino[level](pinoFields(fields), msg);
      else pino[level](msg);
    };
  return {
    debug: method('debug'),
    info: method('info'),
    warn: method('warn'),
    error: method('error'),
  };
}
