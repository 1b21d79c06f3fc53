import { describe, expect, it } from 'vitest';
import { rejectionOf } from '../testing/rejection.js';
import { limitSeconds, remoteCommandProcess } from './remote-command.js';

function control() {
  let end!: (exitCode: number | null) => void;
  let lose!: (error: Error) => void;
  const signals: string[] = [];
  const ended = new Promise<number | null>((resolve, reject) => {
    end = resolve;
    lose = reject;
  });
  return {
    control: {
      ended,
      signal: async (signal: string) => {
        signals.push(signal);
      },
    },
    signals,
    end,
    lose,
  };
}

const hooks = (lost: Error[] = []) => ({
  failure: (error: unknown) => new Error(`typed: ${(error as Error).message}`),
  lost: (error: Error) => lost.push(error),
});

describe('remoteCommandProcess', () => {
  it('reports a status as it is when this client sent no signal', async () => {
    const c = control();
    const process = remoteCommandProcess(c.control, hooks());
    c.end(137);
    expect(await process.exited).toEqual({ exitCode: 137 });
  });

  it('a command that ends by the signal this client sent is reported as ended by it', async () => {
    for (const status of [null, 143, -15]) {
      const c = control();
      const process = remoteCommandProcess(c.control, hooks());
      await process.kill('SIGTERM');
      c.end(status);
      expect(await process.exited).toEqual({ exitCode: null, signal: 'SIGTERM' });
      expect(c.signals).toEqual(['SIGTERM']);
    }
  });

  it('a command that traps the signal and exits on its own keeps its status', async () => {
    const c = control();
    const process = remoteCommandProcess(c.control, hooks());
    await process.kill('SIGTERM');
    c.end(0);
    expect(await process.exited).toEqual({ exitCode: 0 });
  });

  it('a lost command ends without a status and is told once, typed; calls fail typed', async () => {
    const lost: Error[] = [];
    const c = control();
    const process = remoteCommandProcess(
      { ...c.control, signal: async () => Promise.reject(new Error('gone')) },
      hooks(lost),
    );
    expect(await rejectionOf(process.kill('SIGKILL'))).toMatchObject({ message: 'typed: gone' });
    c.lose(new Error('reset'));
    expect(await process.exited).toEqual({ exitCode: null, signal: 'SIGKILL' });
    expect(lost.map((e) => e.message)).toEqual(['typed: reset']);
    expect(process.write).toBeUndefined();
  });

  it('limitSeconds rounds up to whole seconds, at least one', () => {
    expect(limitSeconds(1)).toBe(1);
    expect(limitSeconds(2_500)).toBe(3);
    expect(limitSeconds(600_000)).toBe(600);
  });
});
