import { describe, expect, it } from 'vitest';
import { boundedHealthCheck } from './bounded-health-check.js';
import { Deferred, settle, track } from '../testing/deferred.js';
import { ManualClock } from '../testing/manual-clock.js';
import { recordingLogger } from '../testing/recording-logger.js';

function setup() {
  const clock = new ManualClock();
  const logger = recordingLogger();
  const options = { timeoutSeconds: 10, clock, logger, name: 'VM health check', sandboxId: 'sb1' };
  return { clock, logger, options };
}

describe('boundedHealthCheck', () => {
  it('is what the probe answers in time, without a warning', async () => {
    const { logger, options } = setup();
    expect(await boundedHealthCheck(async () => true, options)).toBe(true);
    expect(await boundedHealthCheck(async () => false, options)).toBe(false);
    expect(logger.lines).toEqual([]);
  });

  it('fails at the deadline, aborts the probe’s signal and warns naming the limit', async () => {
    const { clock, logger, options } = setup();
    const answer = new Deferred<boolean>();
    let probeSignal: AbortSignal | undefined;
    const check = track(
      boundedHealthCheck((signal) => {
        probeSignal = signal;
        return answer.promise;
      }, options),
    );
    await clock.advance(9_999);
    await settle();
    expect(check.settled).toBe(false);
    expect(probeSignal?.aborted).toBe(false);

    await clock.advance(1);
    expect(await check.promise).toBe(false);
    expect(probeSignal?.aborted).toBe(true);
    expect(logger.lines).toEqual([
      {
        level: 'warn',
        msg: 'VM health check timed out',
        fields: { sandboxId: 'sb1', timeoutSeconds: 10 },
      },
    ]);
    answer.resolve(true); // a late answer changes nothing
  });

  it('turns a failing probe, sync or async, into false with a warning', async () => {
    const { logger, options } = setup();
    const boom = new Error('connection reset');
    expect(await boundedHealthCheck(() => Promise.reject(boom), options)).toBe(false);
    expect(
      await boundedHealthCheck(() => {
        throw boom;
      }, options),
    ).toBe(false);
    expect(logger.lines.map((l) => [l.level, l.msg, l.fields?.error])).toEqual([
      ['warn', 'VM health check failed', boom],
      ['warn', 'VM health check failed', boom],
    ]);
  });
});
