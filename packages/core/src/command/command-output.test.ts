import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_COMMAND_TIMEOUT_SECONDS,
  assembleCommandOutput,
  formatSeconds,
  timeoutNotice,
} from './command-output.js';
import { InvalidArgumentError } from '../errors/errors.js';

describe('assembleCommandOutput (§6.4)', () => {
  it('matches the contract texts', () => {
    expect(assembleCommandOutput({ stdout: 'hello\n', stderr: '', exitCode: 0 })).toBe('hello\n');
    expect(assembleCommandOutput({ stdout: '', stderr: '', exitCode: 3 })).toBe('\nExit Code: 3');
    expect(assembleCommandOutput({ stdout: '', stderr: '', exitCode: 0 })).toBe('(no output)');
    expect(assembleCommandOutput({ stdout: '', stderr: 'err\n', exitCode: 0 })).toBe('err\n');
    expect(assembleCommandOutput({ stdout: 'out\n', stderr: 'err\n', exitCode: 2 })).toBe(
      'out\n\nStd Error:\nerr\n\nExit Code: 2',
    );
  });

  it('an exit code follows stderr without a header when there is no stdout', () => {
    expect(assembleCommandOutput({ stdout: '', stderr: 'err\n', exitCode: 1 })).toBe(
      'err\n\nExit Code: 1',
    );
  });

  it('a timeout shows the notice and never an exit code', () => {
    const out = assembleCommandOutput({
      stdout: 'x\n',
      stderr: '',
      exitCode: -1,
      timedOut: true,
      timeoutSeconds: 1,
    });
    expect(out).toBe(`x\n\n${timeoutNotice(1)}`);
    expect(
      assembleCommandOutput({
        stdout: '',
        stderr: '',
        exitCode: 137,
        timedOut: true,
        timeoutSeconds: 2,
      }),
    ).toBe(timeoutNotice(2));
    expect(
      assembleCommandOutput({
        stdout: 'a',
        stderr: 'b',
        exitCode: 0,
        timedOut: true,
        timeoutSeconds: 3,
      }),
    ).toBe(`a\nStd Error:\nb\n${timeoutNotice(3)}`);
  });

  it('a limit that was not hit changes nothing', () => {
    expect(
      assembleCommandOutput({
        stdout: 'ok\n',
        stderr: '',
        exitCode: 0,
        timedOut: false,
        timeoutSeconds: 5,
      }),
    ).toBe('ok\n');
  });

  it('refuses a timed-out outcome without its limit instead of inventing one', () => {
    expect(() =>
      assembleCommandOutput({ stdout: '', stderr: '', exitCode: 0, timedOut: true }),
    ).toThrow(InvalidArgumentError);
  });

  it('property: stdout comes first, a timeout ends with the notice and has no exit code', () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.string(),
        fc.integer({ min: -255, max: 255 }),
        fc.option(fc.double({ min: 0.001, max: 10_000, noNaN: true }), { nil: undefined }),
        (stdout, stderr, exitCode, timeoutSeconds) => {
          const timedOut = timeoutSeconds !== undefined;
          const out = assembleCommandOutput({ stdout, stderr, exitCode, timedOut, timeoutSeconds });
          expect(out.startsWith(stdout)).toBe(true);
          if (timedOut) {
            expect(out.endsWith(timeoutNotice(timeoutSeconds))).toBe(true);
            expect(out).not.toMatch(/\nExit Code: -?\d+$/);
          } else if (exitCode !== 0) {
            expect(out.endsWith(`\nExit Code: ${exitCode}`)).toBe(true);
          } else if (!stdout && !stderr) {
            expect(out).toBe('(no output)');
          }
        },
      ),
    );
  });
});

describe('timeoutNotice and formatSeconds', () => {
  it('§10.6.71 formats 1.5 seconds and 600 seconds', () => {
    expect(formatSeconds(1.5)).toBe('1.5 seconds');
    expect(formatSeconds(1)).toBe('1 second');
    expect(formatSeconds(600)).toBe('600 seconds');
    expect(timeoutNotice(1.5)).toMatch(
      /^Command timed out after 1\.5 seconds and was terminated\. /,
    );
  });

  it('tells the agent to background long-running commands', () => {
    expect(timeoutNotice(1)).toContain('timed out after 1 second and was terminated');
    expect(timeoutNotice(2.5)).toContain('after 2.5 seconds and');
    expect(timeoutNotice(1)).toContain('> /mnt/user-data/workspace/server.log 2>&1 &');
  });

  it('defaults a host command to 600 seconds', () => {
    expect(DEFAULT_COMMAND_TIMEOUT_SECONDS).toBe(600);
  });
});
