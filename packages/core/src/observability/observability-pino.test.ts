import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { PinoLike } from './observability-pino.js';
import { fromPino } from './observability-pino.js';

/** A real pino logger writing JSON lines into memory. */
function memoryPino(level: string) {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  // Synchronous enough for tests: pino writes each line to the stream before the call returns.
  const logger = pino({ level, base: undefined, timestamp: false }, destination);
  return { logger, lines };
}

describe('fromPino', () => {
  it('accepts a real pino logger and a child of one', () => {
    const { logger } = memoryPino('info');
    const asLike: PinoLike = logger;
    const child: PinoLike = logger.child({ component: 'sbx' });
    expect(typeof fromPino(asLike).info).toBe('function');
    expect(typeof fromPino(child).warn).toBe('function');
  });

  it('passes the message and fields in pino order, at the matching level', () => {
    const { logger, lines } = memoryPino('debug');
    const log = fromPino(logger.child({ component: 'sbx' }));
    log.debug('acquire finished', { path: 'create', durationMs: 12 });
    log.info('plain message');
    log.warn('empty fields', {});
    log.error('failed', { sandboxId: 's1' });
    expect(lines).toEqual([
      { level: 20, component: 'sbx', path: 'create', durationMs: 12, msg: 'acquire finished' },
      { level: 30, component: 'sbx', msg: 'plain message' },
      { level: 40, component: 'sbx', msg: 'empty fields' },
      { level: 50, component: 'sbx', sandboxId: 's1', msg: 'failed' },
    ]);
  });

  it('leaves level filtering to pino', () => {
    const { logger, lines } = memoryPino('warn');
    const log = fromPino(logger);
    log.debug('hidden');
    log.info('hidden', { a: 1 });
    log.warn('shown');
    expect(lines.map((l) => l.msg)).toEqual(['shown']);
  });

  it("hands an Error under `error` to pino's err serializer, with its message and stack", () => {
    const { logger, lines } = memoryPino('info');
    const failure = new Error('redis unreachable');
    fromPino(logger).warn('renew failed', { error: failure, sandboxId: 's1' });
    const [line] = lines;
    expect(line?.sandboxId).toBe('s1');
    expect(line?.error).toBeUndefined();
    expect(line?.err).toMatchObject({ type: 'Error', message: 'redis unreachable' });
    expect(String((line?.err as { stack?: unknown }).stack)).toContain('redis unreachable');
  });

  it('keeps a non-Error `error` field and a caller-set `err` as they are', () => {
    const { logger, lines } = memoryPino('info');
    const log = fromPino(logger);
    log.info('as text', { error: 'timeout' });
    log.info('both', { error: new Error('inner'), err: new Error('outer') });
    expect(lines[0]?.error).toBe('timeout');
    expect(lines[1]?.err).toMatchObject({ message: 'outer' });
  });
});
