import { describe, expect, it } from 'vitest';
import { recordingLogger } from './recording-logger.js';

describe('recordingLogger', () => {
  it('keeps every line in order with its level, and fields only when given', () => {
    const logger = recordingLogger();
    logger.info('started');
    logger.warn('slow', { ms: 5 });
    logger.error('failed', { id: 'a' });
    logger.debug('detail');
    expect(logger.lines).toStrictEqual([
      { level: 'info', msg: 'started' },
      { level: 'warn', msg: 'slow', fields: { ms: 5 } },
      { level: 'error', msg: 'failed', fields: { id: 'a' } },
      { level: 'debug', msg: 'detail' },
    ]);
  });

  it('renders the lines of one level, or all, as text', () => {
    const logger = recordingLogger();
    logger.warn('first', { n: 1 });
    logger.info('between');
    logger.warn('second');
    expect(logger.text('warn')).toBe('first {"n":1}\nsecond {}');
    expect(logger.text()).toBe('first {"n":1}\nbetween {}\nsecond {}');
    expect(logger.text('error')).toBe('');
  });
});
